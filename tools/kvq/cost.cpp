// kvq cost — prefill time (TTFT) with and without a quantized KV cache, from the roofline
// model of kvq/cost/prefill.hpp with the calibration of kvq/cost/calibration.hpp.
#include "subcommands.hpp"

#include <kvq/cost.hpp>
#include <kvq/study/json.hpp>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace kvq::cli {

namespace {

namespace cost = kvq::cost;
using kvq::study::cell;
using kvq::study::table;

const char kCostHelp[] =
    "usage: kvq cost [--gpu G] [--scheme S] [--prefill L1,L2,...] [--model M | --config FILE]\n"
    "                [--design fused|unfused] [--read dequant|fp8-mma|fresh] [--no-causal] [--csv]\n\n"
    "Time to first token of one prefill of L tokens (batch 1) with a 16-bit KV cache and\n"
    "with scheme S, from a roofline model: every kernel takes max(launch floor, compute\n"
    "time, memory time); per layer the QKV/O/MLP GEMMs, attention, the cache store and (FP8\n"
    "MMA, unfused) the Q quantize kernel, then the LM head for the last token. Two\n"
    "parameters (tensor-core efficiency, issue slots per dequantize op) are fitted on\n"
    "FlashInfer issue #3484; see docs/cost.md for the model, its validation and its limits.\n\n"
    "  --gpu G         a100, h100 (default), h200, b200, rtx-pro-6000, rtx4060\n"
    "  --scheme S      a registry scheme with a storage format (default fp8_e4m3)\n"
    "  --prefill LIST  prefill lengths (default 1k,8k,32k,128k; 1k = 1024)\n"
    "  --model M       smollm2-135m, llama-3.1-8b (default), qwen3-0.6b, glm-moe\n"
    "  --config FILE   a shape from JSON instead: layers, q_heads, kv_heads, head_dim, hidden,\n"
    "                  vocab, and mlp (dense) or experts, experts_topk, shared_experts,\n"
    "                  expert_mlp (MoE); optional name\n"
    "  --design D      fused (default): the store kernel quantizes; unfused: a clamp pass and\n"
    "                  a cast pass per K and V before the store\n"
    "  --read R        dequant (default): K/V tiles converted to BF16 for BF16 MMAs;\n"
    "                  fp8-mma: Q and P quantized, FP8 MMAs (FP8 schemes, GPUs with FP8);\n"
    "                  fresh: prefill attends to its own 16-bit K/V, the cache is written in S\n"
    "                  (16-bit prefill, low-bit decode)\n"
    "  --no-causal     attention without the causal mask (kernel benchmarks)\n"
    "  --csv           CSV with every column\n\n"
    "Columns: prefill; ttft_bf16_ms and ttft_ms (bf16 cache with a fused store, and S);\n"
    "overhead_pct (ttft_ms / ttft_bf16_ms - 1); slope_pp (change of overhead_pct per doubling\n"
    "of L, centred at L); attn_bf16_ms, attn_ms, store_bf16_ms, store_ms (one layer's\n"
    "kernels); --csv adds limit_pct (overhead as L grows without bound).\n";

std::size_t get_size(const kvq::study::json& j, const char* key, bool required, const std::string& file) {
  if (!j.contains(key)) {
    if (required) throw usage_error("cost: --config " + file + ": missing \"" + key + "\"");
    return 0;
  }
  const auto& v = j.at(key);
  if (!v.is_number_unsigned()) throw usage_error("cost: --config " + file + ": \"" + key + "\" is not a non-negative integer");
  return v.get<std::size_t>();
}

cost::model_shape read_config(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw usage_error("cost: --config '" + file + "' cannot be read");
  kvq::study::json j;
  try {
    j = kvq::study::json::parse(in);
  } catch (const std::exception& e) {
    throw usage_error("cost: --config " + file + ": not JSON (" + std::string(e.what()) + ")");
  }
  if (!j.is_object()) throw usage_error("cost: --config " + file + ": not a JSON object");
  cost::model_shape m;
  m.key = j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>() : file;
  m.layers = get_size(j, "layers", true, file);
  m.q_heads = get_size(j, "q_heads", true, file);
  m.kv_heads = get_size(j, "kv_heads", true, file);
  m.head_dim = get_size(j, "head_dim", true, file);
  m.hidden = get_size(j, "hidden", true, file);
  m.vocab = get_size(j, "vocab", true, file);
  m.mlp = get_size(j, "mlp", false, file);
  m.experts = get_size(j, "experts", false, file);
  m.experts_topk = get_size(j, "experts_topk", false, file);
  m.shared_experts = get_size(j, "shared_experts", false, file);
  m.expert_mlp = get_size(j, "expert_mlp", false, file);
  m.source = file;
  try {
    m.check();
  } catch (const std::invalid_argument& e) {
    throw usage_error(std::string("cost: --config ") + file + ": " + e.what());
  }
  return m;
}

}  // namespace

int cmd_cost(const std::vector<std::string>& args) {
  std::string gpu = "h100", scheme = "fp8_e4m3", lengths = "1k,8k,32k,128k", model = "llama-3.1-8b", config;
  std::string design = "fused", read = "dequant";
  bool csv = false, causal = true, model_given = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw usage_error("cost: " + a + " needs a value");
      return args[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kCostHelp, stdout);
      return 0;
    } else if (a == "--gpu") gpu = value();
    else if (a == "--scheme") scheme = value();
    else if (a == "--prefill") lengths = value();
    else if (a == "--model") model = value(), model_given = true;
    else if (a == "--config") config = value();
    else if (a == "--design") design = value();
    else if (a == "--read") read = value();
    else if (a == "--no-causal") causal = false;
    else if (a == "--csv") csv = true;
    else
      throw usage_error("cost: unknown option '" + a +
                        "' (allowed: --gpu, --scheme, --prefill, --model, --config, --design, --read, --no-causal, "
                        "--csv, --help)");
  }
  if (model_given && !config.empty()) throw usage_error("cost: give either --model or --config, not both");
  const cost::gpu_spec* g = nullptr;
  cost::model_shape m;
  cost::scheme_cost s;
  try {
    g = &cost::find_gpu(gpu);
    m = config.empty() ? cost::find_shape(model) : read_config(config);
  } catch (const std::invalid_argument& e) {
    throw usage_error(std::string("cost: ") + e.what());
  }
  try {
    s = cost::describe_scheme(scheme, m.head_dim);
  } catch (const std::invalid_argument& e) {
    throw usage_error(std::string("cost: ") + e.what());
  }
  cost::store_design d;
  if (design == "fused") d = cost::store_design::fused;
  else if (design == "unfused") d = cost::store_design::unfused;
  else throw usage_error("cost: unknown design '" + design + "' (allowed: fused, unfused)");
  cost::read_path r;
  if (read == "dequant") r = cost::read_path::dequant;
  else if (read == "fp8-mma") r = cost::read_path::fp8_mma;
  else if (read == "fresh") r = cost::read_path::fresh;
  else throw usage_error("cost: unknown read path '" + read + "' (allowed: dequant, fp8-mma, fresh)");
  std::vector<std::size_t> Ls;
  for (const std::string& v : kvq::study::split(lengths)) {
    long long x = 0;
    if (!kvq::study::parse_int(v, x) || x < 1 || x > (1LL << 24))
      throw usage_error("cost: --prefill '" + v + "' is not an integer in [1, 16M]");
    Ls.push_back(static_cast<std::size_t>(x));
  }
  const cost::calibration& cal = cost::default_calibration();
  // Every row is computed before anything is printed, so bad input prints nothing.
  table t;
  t.title = "Prefill time: " + m.key + " on " + g->name + ", " + s.name + " (" + cost::to_string(d) + " store, " +
            cost::to_string(r) + " read" + (causal ? "" : ", no causal mask") + ") vs bf16";
  t.columns = {{"prefill", "tokens"},
               {"ttft_bf16_ms", "prefill time, bf16 cache"},
               {"ttft_ms", "prefill time, scheme"},
               {"overhead_pct", "ttft_ms / ttft_bf16_ms - 1, percent"},
               {"slope_pp", "change of overhead_pct per doubling of L"},
               {"attn_bf16_ms", "attention kernel, one layer, bf16"},
               {"attn_ms", "attention kernel, one layer, scheme"},
               {"store_bf16_ms", "cache store, one layer, bf16"},
               {"store_ms", "cache store, one layer, scheme"},
               {"limit_pct", "overhead as L grows without bound", false}};
  double limit = 0;
  try {
    limit = 100.0 * cost::overhead_limit(*g, m, s, r, cal, causal);
    for (std::size_t L : Ls) {
      const cost::prefill_times q = cost::prefill(*g, m, s, d, r, L, cal, causal);
      const cost::prefill_times b = cost::baseline(*g, m, L, cal, causal);
      t.rows.push_back({L, b.total() * 1e3, q.total() * 1e3, 100.0 * (q.total() / b.total() - 1.0),
                        100.0 * cost::overhead_slope(*g, m, s, d, r, L, cal, causal), b.layer.attention * 1e3,
                        q.layer.attention * 1e3, b.layer.store * 1e3, q.layer.store * 1e3, limit});
    }
  } catch (const std::invalid_argument& e) {
    throw usage_error(std::string("cost: ") + e.what());
  }
  if (csv) {
    std::fputs(kvq::study::to_csv(t).c_str(), stdout);
    return 0;
  }
  kvq::study::print_table(t, stdout);
  std::printf("overhead as L grows without bound: %s %%\n", kvq::study::term_cell(cell(limit)).c_str());
  std::printf("gpu %s: %s; launch floor %g us (assumed, not a datasheet number)\n", g->key, g->source, g->launch_us);
  std::printf("model %s: %s\n", m.key.c_str(), m.source.c_str());
  std::printf("calibration: tensor efficiency %.4f, %.3f issue slots per dequantize op, q tile %zu (fitted on "
              "FlashInfer #3484)\n",
              cal.eta_tensor, cal.dequant_slots, cal.q_tile);
  return 0;
}

}  // namespace kvq::cli
