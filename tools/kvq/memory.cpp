// kvq memory — KV-cache bytes per token and what fits in a memory budget, per storage
// format, from the kv/ memory planner (kvq::kv::kv_bytes and friends). Every byte the
// caches of <kvq/kv/cache.hpp> hold is counted: codes, block scales, zero points,
// tensor scales, KIVI residual windows, page rounding.
#include "subcommands.hpp"

#include <CLI/CLI.hpp>

#include <kvq/kv/planner.hpp>
#include <kvq/kv/registry.hpp>

#include <cmath>
#include <cstdint>
#include <memory>
#include <limits>
#include <string>
#include <vector>

namespace kvq::cli {

namespace {

namespace kv = kvq::kv;
using kvq::study::cell;
using kvq::study::column;
using kvq::study::table;

struct model_choice {
  const char* key;
  const kv::model_shape* shape;
};
const model_choice kModels[] = {{"llama3.1-8b", &kv::presets::llama31_8b},
                                {"llama3.1-70b", &kv::presets::llama31_70b},
                                {"qwen2.5-7b", &kv::presets::qwen25_7b},
                                {"deepseek-v3", &kv::presets::deepseek_v3}};

const char* const kDefaultFormats =
    "bf16,fp8_e4m3,fp8_per_token_head,mxfp8_e4m3_rceil,mxfp6_e2m3_rceil,nvfp4_te,nvfp4_vllm,mxfp4_rceil,kivi_int4,"
    "kivi_int2";

std::string model_keys() {
  std::string s;
  for (const auto& m : kModels) s += (s.empty() ? "" : ", ") + std::string(m.key);
  return s;
}

// Every registry scheme with a storage format (the planner counts formats' bytes).
std::string all_format_names() {
  std::string s;
  for (const auto& n : kv::scheme_names())
    if (kv::find_scheme(n).format) s += (s.empty() ? "" : ", ") + n;
  return s;
}

const char kMemoryHelp[] =
    "usage: kvq memory [--model NAME | --layers L --kv-heads H --head-dim D [--mla]]\n"
    "                  [--formats F1,F2,...] [--context N] [--batch B] [--budget-gib G]\n"
    "                  [--page-tokens P] [--kivi-residual R] [--tiered SINKS,WINDOW]\n"
    "                  [--compaction-ratio R [--bias-dtype fp32|bf16|none]] [--csv]\n"
    "                  [--list-formats]\n\n"
    "KV-cache memory of one model under each storage format: bytes per token, the bytes of\n"
    "B sequences of N tokens, and what fits in a budget (longest context for B sequences,\n"
    "most sequences of N tokens). Every stored byte is counted: codes, block scales, zero\n"
    "points, tensor scales, KIVI's full-precision residual window (in the scheme's compute\n"
    "dtype: fp32 for kivi_int*, fp16 for kivi_int*_fp16), and page rounding (a sequence of\n"
    "n tokens holds ceil(n/P) pages of P tokens, as vLLM's paged cache does).\n\n"
    "  --model NAME        llama3.1-8b (default), llama3.1-70b, qwen2.5-7b, deepseek-v3 (MLA)\n"
    "  --layers L --kv-heads H --head-dim D\n"
    "                      a custom model instead (--mla: one latent vector of D values per\n"
    "                      token and layer, no separate K/V heads; --kv-heads not used)\n"
    "  --formats LIST      storage formats (default: bf16, fp8_e4m3, fp8_per_token_head,\n"
    "                      mxfp8_e4m3_rceil, mxfp6_e2m3_rceil, nvfp4_te, nvfp4_vllm,\n"
    "                      mxfp4_rceil, kivi_int4, kivi_int2); --list-formats lists all\n"
    "  --context N         tokens per sequence (default 128k; 1k = 1024)\n"
    "  --batch B           sequences (default 1)\n"
    "  --budget-gib G      memory for the KV cache in GiB (default 40)\n"
    "  --page-tokens P     tokens per page (default 16, vLLM's block size; 0 = no paging)\n"
    "  --kivi-residual R   KIVI's full-precision window of recent tokens (default 128)\n"
    "  --tiered S,W        also a tiered row per low-precision format: the first S tokens\n"
    "                      (sinks) and the last W tokens in bf16, the rest in the format\n"
    "                      (no page rounding for tiered rows)\n"
    "  --compaction-ratio R  also a compacted row per format: floor(N/R) tokens kept (at\n"
    "                      least one; 1 <= R < N) in the format, paged, plus one score bias\n"
    "                      per kept token per KV head per layer (Attention Matching's beta)\n"
    "  --bias-dtype T      storage of those biases: fp32 (default, 4 bytes), bf16 (2), none\n"
    "                      (eviction: no biases)\n"
    "  --csv               CSV with every column instead of the table\n\n"
    "Columns: format; bits_per_value (stored bits per cached value, scales included, fixed\n"
    "tensor scales and windows excluded); bytes_per_token (all layers, K and V);\n"
    "context_bytes (exact bytes of B sequences of N tokens; --csv only, the table shows\n"
    "context_gib, the same in GiB); vs_bf16 (context_bytes over bf16's); max_context\n"
    "(longest context of B sequences within the budget); max_batch (most sequences of N\n"
    "tokens within the budget). Compacted rows (<format>/R) count bytes_per_token and\n"
    "bits_per_value per original token, and max_context in original tokens. A default\n"
    "format whose block size does not divide the head dimension is left out with a note on\n"
    "stderr; one named in --formats is an error.\n\n"
    "FP6 codes (mxfp6_*) take one byte each, as kvq's kernel layout stores them; a cache\n"
    "that packs four FP6 codes into three bytes needs 6.25 bits per value instead of 8.25.\n";

// Digits with an optional k/m suffix: a count that parse_int refuses only for its size.
bool looks_like_count(const std::string& v) {
  std::size_t n = v.size();
  if (n > 0 && (v[n - 1] == 'k' || v[n - 1] == 'K' || v[n - 1] == 'm' || v[n - 1] == 'M')) --n;
  if (n == 0) return false;
  for (std::size_t i = 0; i < n; ++i)
    if (v[i] < '0' || v[i] > '9') return false;
  return true;
}

std::size_t parse_count(const std::string& opt, const std::string& v, long long min,
                        long long max = std::numeric_limits<long long>::max()) {
  long long x = 0;
  const bool parsed = kvq::study::parse_int(v, x);
  if ((parsed && x > max) || (!parsed && looks_like_count(v)))
    throw usage_error("memory: " + opt + " '" + v + "' is too large (max " + std::to_string(max) + ")");
  if (!parsed || x < min)
    throw usage_error("memory: " + opt + " '" + v + "' is not an integer >= " + std::to_string(min));
  return static_cast<std::size_t>(x);
}

}  // namespace

int cmd_memory(const std::vector<std::string>& args) {
  const kv::model_shape* preset = &kv::presets::llama31_8b;
  bool custom = false, mla = false, csv = false, tiered = false, compacted = false;
  double ratio = 0.0;
  kv::bias_dtype bias = kv::bias_dtype::fp32;
  std::size_t layers = 0, kv_heads = 0, head_dim = 0;
  std::string formats = kDefaultFormats;
  std::size_t context = 131072, batch = 1, page = 16, sinks = 0, window = 0;
  kv::kivi_options kivi;
  double budget_gib = 40.0;
  std::string model_arg;

  // The command line, parsed with CLI11 (values as text, checked below with messages
  // that name the option and the allowed values).
  CLI::App app{"kvq memory", "kvq memory"};
  app.set_help_flag();
  app.allow_extras();
  bool help = false, list = false;
  std::string o_model, o_layers, o_kv_heads, o_head_dim, o_context, o_batch, o_budget, o_page, o_kivi, o_tiered, o_ratio, o_bias;
  app.add_flag("-h,--help", help);
  app.add_flag("--list-formats", list);
  app.add_flag("--csv", csv);
  app.add_flag("--mla", mla);
  struct valued {
    const char* name;
    std::string* value;
  };
  const valued options[] = {{"--model", &o_model},       {"--layers", &o_layers},     {"--kv-heads", &o_kv_heads},
                            {"--head-dim", &o_head_dim}, {"--formats", &formats},     {"--context", &o_context},
                            {"--batch", &o_batch},       {"--budget-gib", &o_budget}, {"--page-tokens", &o_page},
                            {"--kivi-residual", &o_kivi}, {"--tiered", &o_tiered},
                            {"--compaction-ratio", &o_ratio}, {"--bias-dtype", &o_bias}};
  for (const auto& o : options) app.add_option(o.name, *o.value)->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  try {
    app.parse(std::vector<std::string>(args.rbegin(), args.rend()));
  } catch (const CLI::ParseError& e) {
    throw usage_error(std::string("memory: ") + e.what());
  }
  for (const std::string& extra : app.remaining())
    throw usage_error("memory: unknown option '" + extra.substr(0, extra.find('=')) +
                      "' (allowed: --model, --layers, --kv-heads, --head-dim, --mla, --formats, --context, --batch, "
                      "--budget-gib, --page-tokens, --kivi-residual, --tiered, --compaction-ratio, --bias-dtype, --csv, "
                      "--list-formats, --help)");
  if (help) {
    std::fputs(kMemoryHelp, stdout);
    return 0;
  }
  if (list) {
    std::printf("%s\n", all_format_names().c_str());
    return 0;
  }
  auto given = [&app](const char* name) { return app.count(name) > 0; };
  if (given("--model")) {
    model_arg = o_model;
    preset = nullptr;
    for (const auto& m : kModels)
      if (o_model == m.key) preset = m.shape;
    if (!preset) throw usage_error("memory: unknown model '" + o_model + "' (allowed: " + model_keys() + ")");
  }
  if (given("--layers")) layers = parse_count("--layers", o_layers, 1), custom = true;
  if (given("--kv-heads")) kv_heads = parse_count("--kv-heads", o_kv_heads, 1), custom = true;
  if (given("--head-dim")) head_dim = parse_count("--head-dim", o_head_dim, 1), custom = true;
  // No context beyond the longest one max_context searches (kv::max_context_search_limit).
  if (given("--context"))
    context = parse_count("--context", o_context, 1, static_cast<long long>(kv::max_context_search_limit));
  if (given("--batch")) batch = parse_count("--batch", o_batch, 1);
  if (given("--budget-gib") &&
      (!kvq::study::parse_real(o_budget, budget_gib) || !(budget_gib > 0) || budget_gib > 1e9))
    throw usage_error("memory: --budget-gib '" + o_budget + "' is not a number in (0, 1e9]");
  if (given("--page-tokens")) page = parse_count("--page-tokens", o_page, 0);
  if (given("--kivi-residual")) kivi.residual = parse_count("--kivi-residual", o_kivi, 1);
  if (given("--tiered")) {
    const auto parts = kvq::study::split(o_tiered);
    if (parts.size() != 2) throw usage_error("memory: --tiered '" + o_tiered + "' is not SINKS,WINDOW (e.g. 4,128)");
    sinks = parse_count("--tiered sinks", parts[0], 0);
    window = parse_count("--tiered window", parts[1], 0);
    tiered = true;
  }
  if (given("--compaction-ratio")) {
    if (!kvq::study::parse_real(o_ratio, ratio) || !(ratio >= 1.0) || !(ratio < static_cast<double>(context)))
      throw usage_error("memory: --compaction-ratio '" + o_ratio + "' is not a number in [1, " +
                        std::to_string(context) + ") (1 <= R < the context)");
    compacted = true;
  }
  if (given("--bias-dtype")) {
    if (!compacted) throw usage_error("memory: --bias-dtype needs --compaction-ratio");
    if (o_bias == "fp32") bias = kv::bias_dtype::fp32;
    else if (o_bias == "bf16") bias = kv::bias_dtype::bf16;
    else if (o_bias == "none") bias = kv::bias_dtype::none;
    else throw usage_error("memory: unknown bias dtype '" + o_bias + "' (allowed: fp32, bf16, none)");
  }

  kv::model_shape m{};
  if (custom || mla) {
    if (!model_arg.empty()) throw usage_error("memory: give either --model or --layers/--kv-heads/--head-dim, not both");
    if (layers == 0 || head_dim == 0 || (!mla && kv_heads == 0))
      throw usage_error(mla ? "memory: a custom MLA model needs --layers and --head-dim"
                            : "memory: a custom model needs --layers, --kv-heads and --head-dim");
    m = kv::model_shape{"custom", layers, mla ? 0 : kv_heads, head_dim, mla, "command line"};
  } else {
    m = *preset;
  }
  if (compacted && m.mla) throw usage_error("memory: --compaction-ratio needs a model with KV heads (not MLA)");

  struct row_def {
    std::string name;
    kv::named_format k;  // errors name the scheme as given
    bool is_tiered;
    bool is_compacted = false;
  };
  std::vector<row_def> rows;
  for (const std::string& name : kvq::study::split(formats)) {
    if (name.empty()) throw usage_error("memory: --formats has an empty entry (see --list-formats)");
    std::shared_ptr<const kv::scheme> s = kv::registry::global().lookup(name);
    if (!s || !s->format)
      throw usage_error("memory: unknown format '" + name + "' (allowed: " + all_format_names() + ")");
    rows.push_back({s->name, kv::named_format(*s), false});
  }
  if (tiered) {
    const std::size_t n = rows.size();
    for (std::size_t i = 0; i < n; ++i)
      if (!std::holds_alternative<kv::hp_format>(rows[i].k.format)) rows.push_back({rows[i].name, rows[i].k, true});
  }
  if (compacted) {
    const std::size_t n = rows.size();
    for (std::size_t i = 0; i < n; ++i)
      if (!rows[i].is_tiered) rows.push_back({rows[i].name, rows[i].k, false, true});
  }

  const double budget_d = std::floor(budget_gib * 1073741824.0);
  if (budget_d >= 1.8e19) throw usage_error("memory: --budget-gib is too large");
  const std::size_t budget = static_cast<std::size_t>(budget_d);
  const double values_per_token = static_cast<double>(m.layers * m.vectors_per_layer() * m.head_dim);

  // A tiered row: sinks and the recent window in bf16, the rest in the row's format.
  auto tiered_policy = [&](const row_def& r) {
    kv::precision_policy p = kv::precision_policy::uniform(r.k.format);
    p.high = kv::hp_format::bf16;
    p.sink_tokens = sinks;
    p.recent_window = window;
    p.kivi = kivi;
    return p;
  };
  // One sequence of n tokens in a row's storage.
  auto seq_bytes = [&](const row_def& r, std::size_t n) -> std::size_t {
    if (r.is_compacted) return kv::compacted_kv_bytes(m, r.k, r.k, n, ratio, bias, page, kivi);
    return r.is_tiered ? kv::policy_bytes(m, tiered_policy(r), n) : kv::kv_bytes(m, r.k, r.k, n, page, kivi);
  };
  auto checked_mul = [](std::size_t a, std::size_t b) -> std::size_t {
    if (a != 0 && b > SIZE_MAX / a) throw usage_error("memory: context x batch bytes overflow 64 bits");
    return a * b;
  };

  const std::size_t bf16_bytes = checked_mul(kv::kv_bytes(m, kv::hp_format::bf16, context, page), batch);

  table t;
  t.title = std::string("KV-cache memory: ") + m.name + " (" + std::to_string(m.layers) + " layers, " +
            (m.mla ? "MLA latent " + std::to_string(m.head_dim)
                   : std::to_string(m.kv_heads) + " KV heads x head_dim " + std::to_string(m.head_dim)) +
            "), context " + std::to_string(context) + ", batch " + std::to_string(batch) + ", budget " +
            kvq::study::term_cell(cell(budget_gib)) + " GiB, pages of " + std::to_string(page) + " tokens";
  t.columns = {{"format", "storage format (tiered: sinks and recent window in bf16; /R: compacted R times)"},
               {"bits_per_value", "stored bits per cached value, scales included"},
               {"bytes_per_token", "bytes per token, all layers, K and V"},
               {"context_bytes", "bytes of batch x context tokens", false},
               {"context_gib", "the same in GiB"},
               {"vs_bf16", "context_bytes / bf16 context_bytes"},
               {"max_context", "longest context of batch sequences within the budget"},
               {"max_batch", "most sequences of context tokens within the budget"}};
  // A default format that cannot store this head dimension (a block size that does not
  // divide it) is left out with a note; a format the user named is an error.
  const bool formats_given = app.count("--formats") > 0;
  std::vector<std::string> skipped;
  for (const auto& r : rows) {
    std::size_t bytes = 0;
    double per_token = 0;
    if (!formats_given && !r.is_tiered) {
      try {
        (void)kv::bytes_per_token(m, r.k, r.k, kivi);
      } catch (const std::invalid_argument& e) {
        skipped.push_back(r.name + " (" + e.what() + ")");
        continue;
      }
    }
    try {
      bytes = checked_mul(seq_bytes(r, context), batch);
      if (r.is_compacted) {
        // Per original token, as the other rows (fixed tensor values excluded): the kept
        // tokens' format bytes and biases over the N original tokens.
        const double kept = static_cast<double>(kv::compacted_tokens(context, ratio));
        const double bias_per_token = static_cast<double>(m.layers * m.kv_heads * kv::bias_bytes(bias));
        per_token = (kv::bytes_per_token(m, r.k, r.k, kivi) + bias_per_token) * kept / static_cast<double>(context);
      } else if (r.is_tiered) {
        // Marginal bytes of low-precision tokens: one more token far past the window.
        const std::size_t big = std::size_t(1) << 20;
        per_token = static_cast<double>(seq_bytes(r, sinks + window + 2 * big) - seq_bytes(r, sinks + window + big)) /
                    static_cast<double>(big);
      } else {
        per_token = kv::bytes_per_token(m, r.k, r.k, kivi);
      }
    } catch (const std::invalid_argument& e) {
      throw usage_error(std::string("memory: ") + e.what());
    }
    std::size_t max_ctx = 0;
    if (r.is_compacted) {
      // Longest original context whose compacted cache fits (contexts of at most R tokens
      // cannot be compacted R times: the smallest compactable one keeps one token).
      const std::size_t nmin = static_cast<std::size_t>(std::floor(ratio)) + 1;
      auto fits = [&](std::size_t n) {
        return n < nmin || kv::compacted_kv_bytes(m, r.k, r.k, n, ratio, bias, page, kivi) <= budget / batch;
      };
      std::size_t lo = nmin, hi = nmin;
      if (!fits(nmin)) {
        max_ctx = 0;
      } else {
        while (fits(hi) && hi < kv::max_context_search_limit) lo = hi, hi *= 2;
        if (fits(hi)) lo = hi;
        while (hi - lo > 1) {
          const std::size_t mid = lo + (hi - lo) / 2;
          (fits(mid) ? lo : hi) = mid;
        }
        max_ctx = lo;
      }
    } else {
      max_ctx = r.is_tiered ? kv::max_context(m, tiered_policy(r), budget, batch)
                            : kv::max_context(m, r.k, r.k, budget, batch, page, kivi);
    }
    const std::size_t one = seq_bytes(r, context);
    const std::size_t max_b = one == 0 ? 0 : budget / one;
    std::string name = r.is_tiered ? r.name + "+bf16(" + std::to_string(sinks) + "," + std::to_string(window) + ")"
                                   : r.name;
    if (r.is_compacted) name += "/" + kvq::study::term_cell(cell(ratio));
    t.rows.push_back({name, per_token * 8.0 / values_per_token, per_token, bytes,
                      static_cast<double>(bytes) / 1073741824.0,
                      static_cast<double>(bytes) / static_cast<double>(bf16_bytes), max_ctx, max_b});
  }
  if (csv) {
    std::fputs(kvq::study::to_csv(t).c_str(), stdout);
  } else {
    kvq::study::print_table(t, stdout);
    // KIVI's window is counted in its compute dtype, which differs between the variants.
    for (const auto& r : rows)
      if (!r.is_tiered && !r.is_compacted && kv::kivi_window_dtype(r.k.format))
        std::printf("%s: the last %zu values and the last n mod %zu keys are kept in %s\n", r.name.c_str(),
                    kivi.residual, kivi.residual, kv::to_string(*kv::kivi_window_dtype(r.k.format)));
  }
  for (const auto& sk : skipped) std::fprintf(stderr, "memory: left out %s\n", sk.c_str());
  // The search stops at the limit: say so rather than print the limit as if it were the
  // answer.
  for (const auto& row : t.rows)
    if (row[6].k == cell::kind::integer && static_cast<std::size_t>(row[6].i) >= kv::max_context_search_limit)
      std::fprintf(stderr, "memory: %s: max_context %zu is the search limit (2^40 tokens); longer contexts fit too\n",
                   row[0].s.c_str(), kv::max_context_search_limit);
  return 0;
}

}  // namespace kvq::cli
