/// \file
/// kvq/study/cli.hpp — the command line of a study, as `kvq study <name>` and every
/// standalone study program take it (parsed with CLI11):
///
///   [--quick] [--quiet] [--out DIR] [--threads N] [--seed S] [--shard I/N] [--max-memory B] [--digits N] [--GRIDPARAM v1,v2,...] [--help]
///   studies that take Q/K/V also: [--kv FILE [--kv-layer L] [--kv-head H] [--kv-rope post|pre]
///                                       [--kv-treatments] [--non-causal]]
///
/// With --shard I/N the run computes only shard I of the study's main phase and writes
/// its partial result `DIR/<study>.shard-I-of-N.json` instead of the tables (shard.hpp,
/// merge.hpp).
///
/// Bad input raises usage_error (one line naming the problem and the allowed values)
/// before anything is created or written; the caller prints it and exits with status 2.
#pragma once

#include <algorithm>
#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <unistd.h>

#include <CLI/CLI.hpp>

#include <kvq/config.hpp>
#include <kvq/study/error.hpp>
#include <kvq/study/kv_file.hpp>
#include <kvq/study/merge.hpp>
#include <kvq/study/output.hpp>
#include <kvq/study/params.hpp>
#include <kvq/study/progress.hpp>
#include <kvq/study/runner.hpp>
#include <kvq/study/shard.hpp>
#include <kvq/study/study.hpp>
#include <kvq/study/table.hpp>

namespace kvq::study {

/// What a parameter of kind `k` takes, as the help text names it ("integers",
/// "numbers", "names", "integer", "number").
inline const char* param_kind_text(param_kind k) {
  switch (k) {
    case param_kind::int_list: return "integers";
    case param_kind::real_list: return "numbers";
    case param_kind::name_list: return "names";
    case param_kind::integer: return "integer";
    case param_kind::real: return "number";
  }
  return "";
}

/// The options every study takes, for help texts.
inline const char* common_options_help() {
  return "  --quick        small grid (seconds); the defaults are the full grid\n"
         "  --quiet        no progress on stderr (by default: redrawn on a terminal, a plain\n"
         "                 line per tenth of the work or 30 s when stderr is a pipe or a file)\n"
         "  --out DIR      also write DIR/<study>.csv (+ extra tables) and DIR/<study>.json\n"
         "                 (configuration, grid, seed, library version, timing) and\n"
         "                 DIR/<study>.manifest.json (size and SHA-256 of each file), written\n"
         "                 last: the files of a run appear together and only complete\n"
         "  --threads N    worker threads (default: all hardware threads); results are\n"
         "                 bit-identical for any N\n"
         "  --seed S       seed of the synthetic data (default 1)\n"
         "  --digits N     significant digits of the reals in the CSV files (1 to 17, default\n"
         "                 10; 17 reads back to the same bits, for comparing builds)\n"
         "  --max-memory B refuse a grid whose estimated memory exceeds B bytes (suffix K, M, G\n"
         "                 or T; default: the physical memory), before anything is written\n"
         "  --shard I/N    compute only shard I of N of the grid's tasks (needs --out) and write\n"
         "                 the partial result DIR/<study>.shard-I-of-N.json; `kvq study merge\n"
         "                 DIR...` turns shards 1..N into the files of a single run\n";
}

/// The --kv options, for the help of the studies that take them.
inline const char* kv_options_help() {
  return "  --kv FILE      run on Q/K/V captured from a model instead of synthetic ones: a\n"
         "                 .safetensors or .npz with layers.{L}.q/k/v [heads, tokens, head_dim], or a\n"
         "                 .npy [3, heads, tokens, head_dim] (docs/kv-input.md). The context grid\n"
         "                 becomes the captured token count, head_dim the captured one. By default\n"
         "                 the queries are the model's own, the LAST min(queries, tokens - 1)\n"
         "                 captured positions, attention is causal (a query at position p sees\n"
         "                 keys 0..p) and no synthetic treatment is applied; the JSON's\n"
         "                 setup.kv_input records query_rows, causal and treatments\n"
         "  --kv-layer L   layer to read (default 0)\n"
         "  --kv-head H    query head to read (default 0); its K/V head under GQA\n"
         "  --kv-rope R    post (default) or pre: the q_pre_rope/k_pre_rope tensors\n"
         "  --kv-treatments  apply the study's synthetic treatments (see above) to the captured\n"
         "                 head too; without it the treatment options are fixed at none\n"
         "  --non-causal   every query attends to all captured keys\n";
}

/// `kvq study <name> --help`: grid options with defaults and allowed values, and every
/// output column.
inline std::string study_help(const study_def& d, const std::string& program = "kvq study") {
  std::string s = "usage: " + program + " " + d.name + " [--quick] [--quiet] [--out DIR] [--threads N] [--seed S] [--shard I/N] [--max-memory B] [--digits N]" +
                  (d.kv.accepted ? " [--kv FILE [--kv-layer L] [--kv-head H] [--kv-rope post|pre] [--kv-treatments] [--non-causal]]" : "") +
                  " [grid options]\n\n" +
                  d.summary + "\n\n" + d.description + "\n\ngrid options (comma-separated lists; 1k = 1024):\n";
  for (const auto& p : d.params) {
    s += "  --" + p.name + " (" + param_kind_text(p.kind) + ")  " + p.help + "\n";
    s += "      default: " + p.full_default;
    if (!p.quick_default.empty() && p.quick_default != p.full_default) s += "   --quick: " + p.quick_default;
    s += "\n";
    if (!p.allowed.empty()) s += "      allowed: " + join(p.allowed) + "\n";
  }
  s += "\noutput:\n";
  for (const auto& t : d.outputs) {
    s += "  " + d.name + (t.name.empty() ? "" : "_" + t.name) + ".csv — " + t.title + "\n";
    for (const auto& c : t.columns) {
      char line[600];
      std::snprintf(line, sizeof line, "      %-22s %s\n", c.name.c_str(), c.help.c_str());
      s += line;
    }
  }
  s += "  " + d.name + ".json — grid, setup, seed, library version, timing, findings\n";
  s += "\ncommon options:\n";
  s += common_options_help();
  if (d.kv.accepted) s += kv_options_help();
  return s;
}

/// The parsed command line of one run.
struct run_request {
  bool help = false;   ///< -h/--help: print study_help() instead of running
  bool quick = false;  ///< --quick: the grid's --quick defaults
  bool quiet = false;  ///< --quiet: no progress on stderr
  std::string out;  ///< empty: no files
  unsigned threads = default_threads();  ///< --threads (1 to 4096; default: all hardware threads)
  std::uint64_t seed = 1;                ///< --seed (default 1)
  bool sharded = false;  ///< --shard given
  shard_spec shard;      ///< --shard I/N (1 of 1 unless sharded)
  std::vector<std::pair<std::string, std::string>> overrides;  ///< grid options, in order
  bool kv_given = false;  ///< --kv FILE
  kv_request kv;          ///< its layer, head and RoPE choice
  double max_memory = 0;  ///< --max-memory in bytes (0: the machine's physical memory)
  int csv_digits = csv_default_digits;  ///< --digits: significant digits of reals in the CSV
};

/// --max-memory: bytes, with an optional binary suffix K, M, G or T ("64G").
inline double parse_max_memory(const std::string& v) {
  std::string body = v;
  double mult = 1;
  if (!body.empty()) {
    const char c = body.back();
    const char* suffixes = "KMGT";
    for (int i = 0; i < 4; ++i)
      if (c == suffixes[i] || c == suffixes[i] + ('a' - 'A')) {
        mult = static_cast<double>(1ull << (10 * (i + 1)));
        body.pop_back();
      }
  }
  double x = 0;
  if (!parse_real(body, x) || !(x > 0) || !(x * mult < 1e21))
    throw usage_error("--max-memory: '" + v + "' is not a byte count (allowed: a positive number with an optional K, M, G "
                      "or T suffix, as 64G)");
  return x * mult;
}

/// Physical memory of this machine in bytes (0 when unknown).
inline double physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
}

/// A rough estimate of the memory a run of the grid needs, in bytes: the tasks running
/// at once (min(threads, contexts x schemes)) each hold K and V of the longest context in
/// fp32, reference and emulated (16 B x context x head_dim), and a double per key for
/// each query (8 B x context x queries, the queries being the grid's queries, or its
/// reference plus held-out queries). It ignores what is shared and what is small, so it
/// is a floor rather than a bound: its purpose is to refuse, before anything is written,
/// a grid that cannot fit, not to plan one that nearly does. 0 for a study without a
/// context and head_dim grid.
inline double estimate_run_bytes(const study_def& def, const config& cfg, unsigned threads) {
  const json g = cfg.to_json();
  if (!g.contains(def.kv.contexts) || !g.contains(def.kv.head_dim)) return 0;
  const json& cj = g.at(def.kv.contexts);
  double n = 0, contexts = 0;
  for (const auto& c : cj.is_array() ? cj : json::array({cj})) {
    n = std::max(n, c.get<double>());
    contexts += 1;
  }
  const double d = g.at(def.kv.head_dim).get<double>();
  double q = 0;
  for (const char* k : {"queries", "ref-queries", "held-out"})
    if (g.contains(k) && g.at(k).is_number()) q += g.at(k).get<double>();
  double schemes = 1;
  if (g.contains("schemes") && g.at("schemes").is_array())
    schemes = std::max<double>(1, static_cast<double>(g.at("schemes").size()));
  const double at_once = std::min(static_cast<double>(threads ? threads : 1), contexts * schemes);
  return at_once * (16.0 * n * d + 8.0 * n * q);
}

/// Refuses (usage_error) a grid whose estimate exceeds --max-memory, or the physical
/// memory when that is not given.
inline void check_run_memory(const study_def& def, const config& cfg, const run_request& req) {
  const double need = estimate_run_bytes(def, cfg, req.threads);
  const double have = req.max_memory > 0 ? req.max_memory : physical_memory_bytes();
  if (have <= 0 || need <= have) return;
  char buf[400];
  std::snprintf(buf, sizeof buf,
                "the grid needs about %.1f GiB (%.0f bytes, an estimate from the longest context, head_dim, queries and "
                "threads), more than %s %.1f GiB; use shorter --%s, a smaller --%s or fewer --threads",
                need / 1073741824.0, need, req.max_memory > 0 ? "--max-memory" : "the physical memory,",
                have / 1073741824.0, def.kv.contexts.c_str(), def.kv.head_dim.c_str());
  throw usage_error(buf);
}

/// The grid options a run on a captured head may not take: the context and head_dim
/// (the captured tensors set them) and, without --kv-treatments, the study's treatment
/// parameters (fixed at none). \throws usage_error naming the option.
inline void check_kv_overrides(const study_def& def, const std::vector<std::pair<std::string, std::string>>& overrides,
                               bool treatments) {
  for (const auto& o : overrides) {
    if (o.first == def.kv.contexts || o.first == def.kv.head_dim)
      throw usage_error("--" + o.first + " cannot be combined with --kv (the captured tensors set it)");
    if (!treatments)
      for (const auto& t : def.kv.treatment_params)
        if (o.first == t.first)
          throw usage_error("--" + o.first + " sets a synthetic treatment; on a captured head (--kv) it needs "
                            "--kv-treatments (without it --" + t.first + " is " + t.second + ")");
  }
}

/// Reads the captured head of a --kv run. \throws usage_error with the file's problem.
inline kv_head load_kv_input(const kv_request& r) {
  try {
    return load_kv_head(r);
  } catch (const std::exception& e) {
    throw usage_error(std::string("--kv: ") + e.what());
  }
}

/// The grid of a run: resolve() of the overrides; on a captured head (kv non-null) its
/// token count and head_dim set the context and head dimension, the query count is capped
/// at tokens - 1 (the last positions are the queries, each with 2 keys or more), and
/// without kv->request.treatments the treatment parameters take their none value.
/// \throws usage_error for a grid the captured shape breaks, naming the file.
inline config resolve_run_grid(const study_def& def, bool quick, std::uint64_t seed,
                               std::vector<std::pair<std::string, std::string>> overrides, const kv_head* kv) {
  if (!kv) return resolve(def, quick, seed, overrides);
  overrides.emplace_back(def.kv.contexts, std::to_string(kv->tokens));
  overrides.emplace_back(def.kv.head_dim, std::to_string(kv->head_dim));
  if (!kv->request.treatments)
    for (const auto& t : def.kv.treatment_params) overrides.push_back(t);
  auto once = [&] {
    try {
      return resolve(def, quick, seed, overrides);
    } catch (const usage_error& e) {
      throw usage_error("--kv " + kv->request.path + " (" + std::to_string(kv->tokens) + " tokens, head_dim " +
                        std::to_string(kv->head_dim) + "): " + e.what());
    }
  };
  if (kv->tokens < 2)
    throw usage_error("--kv " + kv->request.path + ": " + std::to_string(kv->tokens) +
                      " captured token(s) (allowed: 2 or more; the last ones are the queries)");
  config cfg = once();
  if (cfg.integer(def.kv.queries) > static_cast<long long>(kv->tokens - 1)) {
    overrides.emplace_back(def.kv.queries, std::to_string(kv->tokens - 1));
    cfg = once();
  }
  if (def.kv.validate) def.kv.validate(cfg, *kv);
  return cfg;
}

/// --kv-layer / --kv-head: a non-negative decimal integer below 2^31.
inline std::size_t parse_kv_index(const std::string& opt, const std::string& v) {
  if (v.empty() || v.size() > 10 || v.find_first_not_of("0123456789") != std::string::npos || std::stoll(v) > 2147483647LL)
    throw usage_error(opt + ": '" + v + "' is not a valid index (allowed: 0, 1, 2, ...)");
  return static_cast<std::size_t>(std::stoll(v));
}

/// --digits: significant digits of the CSV's reals, 1 to 17.
inline int parse_csv_digits(const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const long d = std::strtol(v.c_str(), &end, 10);
  if (v.empty() || *end != '\0' || errno != 0 || d < 1 || d > csv_exact_digits)
    throw usage_error("--digits: '" + v + "' is not a digit count (allowed: 1 to 17)");
  return static_cast<int>(d);
}

/// --threads: a thread count from 1 to 4096 (parse_int syntax, so 1k = 1024 is accepted).
/// \throws usage_error naming the value and the allowed range otherwise.
inline unsigned parse_threads(const std::string& v) {
  long long t = 0;
  if (!parse_int(v, t) || t < 1 || t > 4096)
    throw usage_error("--threads: '" + v + "' is not a valid thread count (allowed: 1 to 4096)");
  return static_cast<unsigned>(t);
}

/// A seed: decimal digits only (no sign, no spaces), at most 2^64 - 1.
inline std::uint64_t parse_seed(const std::string& v) {
  const std::string bad = "--seed: '" + v + "' is not a valid seed (allowed: 0 to 18446744073709551615)";
  if (v.empty() || v.size() > 20) throw usage_error(bad);
  std::uint64_t s = 0;
  for (char c : v) {
    if (c < '0' || c > '9') throw usage_error(bad);
    const std::uint64_t d = static_cast<std::uint64_t>(c - '0');
    if (s > (UINT64_MAX - d) / 10) throw usage_error(bad);
    s = s * 10 + d;
  }
  return s;
}

/// The value of a flag written --flag=VALUE: true/yes/1 or false/no/0 (any case);
/// anything else is a usage error saying so.
inline bool parse_flag_value(const std::string& flag, const std::string& value) {
  std::string v;
  for (char c : value) v += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  if (v == "true" || v == "yes" || v == "1") return true;
  if (v == "false" || v == "no" || v == "0") return false;
  throw usage_error(flag + " takes no value (or one of true, false, yes, no, 1, 0), got '" + value + "'");
}

/// Parses a study's arguments (everything after the study name) with CLI11.
inline run_request parse_run_request(const study_def& def, const std::vector<std::string>& raw_args) {
  run_request req;
  // --quick=yes, --quiet=0, ...: CLI11 flags take no value, so these are resolved here
  // (a true value becomes the bare flag, a false one is dropped).
  std::vector<std::string> args;
  for (const std::string& a : raw_args) {
    bool handled = false;
    for (const char* flag : {"--quick", "--quiet", "--help"}) {
      const std::string f = flag;
      if (a.size() > f.size() && a.compare(0, f.size() + 1, f + "=") == 0) {
        if (parse_flag_value(f, a.substr(f.size() + 1))) args.push_back(f);
        handled = true;
      }
    }
    if (!handled) args.push_back(a);
  }
  CLI::App app{def.summary, def.name};
  app.set_help_flag();  // help is ours (study_help), CLI11's would list no grid meaning
  app.allow_extras();
  bool help = false, quick = false, quiet = false;
  std::string out, threads, seed, shard, kv_file, kv_layer_text, kv_head_text, kv_rope_text;
  bool kv_treatments = false, non_causal = false;
  app.add_flag("-h,--help", help);
  app.add_flag("--quick", quick);
  app.add_flag("--quiet", quiet);
  CLI::Option* o_out = app.add_option("--out", out);
  CLI::Option* o_threads = app.add_option("--threads", threads);
  CLI::Option* o_seed = app.add_option("--seed", seed);
  CLI::Option* o_shard = app.add_option("--shard", shard);
  std::string max_memory, digits;
  CLI::Option* o_max_memory = app.add_option("--max-memory", max_memory);
  CLI::Option* o_digits = app.add_option("--digits", digits);
  std::map<std::string, std::vector<std::string>> grid;
  std::vector<std::pair<std::string, CLI::Option*>> grid_opts;
  for (const auto& p : def.params) {
    CLI::Option* o = app.add_option("--" + p.name, grid[p.name]);
    o->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
    o->expected(1);
    grid_opts.emplace_back(p.name, o);
  }
  CLI::Option* o_kv = app.add_option("--kv", kv_file);
  CLI::Option* o_kv_layer = app.add_option("--kv-layer", kv_layer_text);
  CLI::Option* o_kv_head = app.add_option("--kv-head", kv_head_text);
  CLI::Option* o_kv_rope = app.add_option("--kv-rope", kv_rope_text);
  CLI::Option* o_kv_treatments = app.add_flag("--kv-treatments", kv_treatments);
  CLI::Option* o_non_causal = app.add_flag("--non-causal", non_causal);
  for (CLI::Option* o : {o_out, o_threads, o_seed, o_shard, o_max_memory, o_digits, o_kv, o_kv_layer, o_kv_head, o_kv_rope})
    o->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  try {
    app.parse(std::vector<std::string>(args.rbegin(), args.rend()));
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    throw usage_error("study " + def.name + ": " + what + " (see kvq study " + def.name + " --help)");
  }
  for (const std::string& extra : app.remaining()) {
    if (extra.rfind("--", 0) == 0) {
      std::vector<std::string> names;
      for (const auto& p : def.params) names.push_back("--" + p.name);
      const std::string key = extra.substr(0, extra.find('='));
      throw usage_error("study " + def.name + ": unknown option '" + key + "' (grid options: " + join(names) + ")");
    }
    throw usage_error("study " + def.name + ": unexpected argument '" + extra + "' (options start with --; see kvq study " +
                      def.name + " --help)");
  }
  req.help = help;
  req.quick = quick;
  req.quiet = quiet;
  if (o_out->count()) {
    if (out.empty()) throw usage_error("--out: empty directory name");
    req.out = out;
  }
  if (o_threads->count()) req.threads = parse_threads(threads);
  if (o_seed->count()) req.seed = parse_seed(seed);
  if (o_max_memory->count()) req.max_memory = parse_max_memory(max_memory);
  if (o_digits->count()) req.csv_digits = parse_csv_digits(digits);
  if (o_shard->count()) {
    req.shard = parse_shard(shard);
    req.sharded = true;
    if (req.out.empty()) throw usage_error("--shard needs --out DIR (where the partial result is written)");
  }
  for (const auto& g : grid_opts)
    if (g.second->count()) req.overrides.emplace_back(g.first, grid[g.first].back());
  if (o_kv->count()) {
    if (!def.kv.accepted)
      throw usage_error("study " + def.name + " does not take --kv (it builds its own Q/K/V; see docs/kv-input.md)");
    if (kv_file.empty()) throw usage_error("--kv: empty file name");
    if (req.sharded) throw usage_error("--kv cannot be combined with --shard (run the captured head in one process)");
    req.kv_given = true;
    req.kv.path = kv_file;
    if (o_kv_layer->count()) req.kv.layer = parse_kv_index("--kv-layer", kv_layer_text);
    if (o_kv_head->count()) req.kv.head = parse_kv_index("--kv-head", kv_head_text);
    if (o_kv_rope->count()) {
      if (kv_rope_text == "post") req.kv.rope = kv_rope::post;
      else if (kv_rope_text == "pre") req.kv.rope = kv_rope::pre;
      else throw usage_error("--kv-rope: unknown value '" + kv_rope_text + "' (allowed: post, pre)");
    }
    req.kv.treatments = kv_treatments;
    req.kv.causal = !non_causal;
    check_kv_overrides(def, req.overrides, req.kv.treatments);
  } else {
    for (CLI::Option* o : {o_kv_layer, o_kv_head, o_kv_rope, o_kv_treatments, o_non_causal})
      if (o->count()) throw usage_error(o->get_name() + " needs --kv FILE");
  }
  return req;
}

/// The setup in a few lines for the terminal: its scalar entries (numbers, flags, short
/// names) as key=value, wrapped; the whole setup (descriptions, lists) is in the JSON.
inline std::string setup_summary(const json& setup, const std::string& json_path) {
  std::vector<std::string> items;
  std::size_t left_out = 0;
  for (auto it = setup.begin(); it != setup.end(); ++it) {
    const json& v = it.value();
    if (v.is_number() || v.is_boolean() || (v.is_string() && v.get<std::string>().size() <= 24))
      items.push_back(it.key() + "=" + (v.is_string() ? v.get<std::string>() : dump_json(v, -1)));
    else
      ++left_out;
  }
  std::string s, line = "setup:";
  std::size_t lines = 0;
  for (const auto& i : items) {
    if (line.size() + 1 + i.size() > 100 && line != "setup:" && line != "      ") {
      s += line + "\n";
      line = "      ";
      if (++lines == 3) break;
    }
    line += " " + i;
  }
  if (lines < 3 && line != "      " && line != "setup:") s += line + "\n";
  if (left_out > 0 || lines == 3)
    s += std::string(s.empty() ? "setup: " : "       ") + "(full setup: " +
         (json_path.empty() ? std::string("in <study>.json, written with --out DIR") : json_path) + ")\n";
  return s;
}

/// Why a rank correlation can read nan: Kendall tau-b and weighted tau are undefined
/// when one ranking is all ties (kvq/metrics/rank.hpp, weighted_tau.hpp), which here is
/// the emulated attention: the reference weights are distinct doubles, while a cache
/// that flushes every key to the same code gives every token the same emulated weight.
inline const char* nan_tau_note() {
  return "\u03c4 (kendall_tau_b, weighted_tau; likewise spearman_rho) is undefined (nan) when the emulated "
         "attention is flat (all weights tied, e.g. every key quantized to the same code); queries with "
         "non-finite weights are counted in nonfinite_queries instead";
}

/// True if some rank-correlation column (kendall_tau_b, weighted_tau, spearman_rho) of a
/// result table holds a nan.
inline bool has_nan_tau(const result& r) {
  for (const auto& t : r.tables)
    for (std::size_t i = 0; i < t.columns.size(); ++i) {
      const std::string& n = t.columns[i].name;
      if (n != "kendall_tau_b" && n != "weighted_tau" && n != "spearman_rho") continue;
      for (const auto& row : t.rows)
        if (i < row.size() && row[i].k == cell::kind::real && std::isnan(row[i].d)) return true;
    }
  return false;
}

/// The end of a run: prints the setup, the terminal tables, the findings and the time,
/// then writes the files to out_dir (none if empty).
inline void print_and_write(const study_def& def, const config& cfg, const result& r, const run_info& info,
                            const std::string& out_dir) {
  namespace fs = std::filesystem;
  std::printf("%s", setup_summary(r.setup, out_dir.empty() ? "" : (fs::path(out_dir) / (def.name + ".json")).string())
                        .c_str());
  for (const auto& t : r.tables) {
    if (!t.terminal) continue;
    print_table(t, stdout);
    std::size_t shown = 0;
    for (const auto& c : t.columns) shown += c.brief ? 1 : 0;
    if (shown < t.columns.size()) {
      const std::string csv = def.name + (t.name.empty() ? "" : "_" + t.name) + ".csv";
      std::printf("  (showing %zu of %zu columns; all in %s)\n", shown, t.columns.size(),
                  out_dir.empty() ? (csv + ", written with --out DIR").c_str()
                                  : (fs::path(out_dir) / csv).string().c_str());
    }
  }
  if (!r.findings.empty()) {
    std::printf("\nfindings:\n");
    for (const auto& f : r.findings) std::printf("  * %s\n", f.c_str());
  }
  if (has_nan_tau(r)) std::printf("\nnote: %s\n", nan_tau_note());
  std::printf("\ntime: %.2f s\n", info.wall_seconds);

  if (!out_dir.empty()) {
    const std::vector<std::string> written = write_output_set(out_dir, def.name, run_files(def, cfg, r, info, out_dir));
    std::printf("wrote:");
    for (const auto& f : written) std::printf(" %s", f.c_str());
    std::printf("\n");
  }
}

/// Runs a study from its command line: resolves the grid, checks --out, runs, prints the
/// tables and findings, and writes the files. Returns the exit status (0); bad input
/// throws usage_error before anything is written.
inline int run_from_command_line(const study_def& def, const std::vector<std::string>& args,
                                 const std::string& command_line, const std::string& program = "kvq study") {
  const run_request req = parse_run_request(def, args);
  if (req.help) {
    std::fputs(study_help(def, program).c_str(), stdout);
    return 0;
  }
  // --kv: read the captured head first (every file problem is bad input, before any
  // output exists), then let its shapes set the context, head_dim and query count.
  kv_head kv;
  if (req.kv_given) kv = load_kv_input(req.kv);
  const config cfg = resolve_run_grid(def, req.quick, req.seed, req.overrides, req.kv_given ? &kv : nullptr);
  check_run_memory(def, cfg, req);
  if (!req.out.empty()) check_out_dir(req.out);

  std::printf("kvq %s — study %s (seed %llu, %s grid, %u thread%s)\n", KVQ_VERSION_STRING, def.name.c_str(),
              static_cast<unsigned long long>(req.seed), req.quick ? "quick" : "full", req.threads,
              req.threads == 1 ? "" : "s");
  std::printf("grid: %s\n", cfg.describe().c_str());
  std::fflush(stdout);

  progress prog(def.name, progress::mode_for_stderr(req.quiet));
  shard_state shard;
  shard.spec = req.shard;
  context ctx{cfg, req.threads, &prog, req.sharded ? &shard : nullptr, req.kv_given ? &kv : nullptr};
  run_info info;
  info.command = command_line;
  info.seed = req.seed;
  info.quick = req.quick;
  info.threads = req.threads;
  info.csv_digits = req.csv_digits;
  info.started_utc = utc_now();
  const auto t0 = std::chrono::steady_clock::now();
  const result r = def.run(ctx);
  info.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  prog.finish();

  if (req.sharded) {
    namespace fs = std::filesystem;
    std::size_t mine = 0, all = 0;
    for (const auto& c : shard.calls) {
      mine += c["results"].size();
      all += c["tasks"].get<std::size_t>();
    }
    std::printf("shard %u/%u: %zu of %zu tasks\ntime: %.2f s\n", req.shard.index, req.shard.count, mine, all,
                info.wall_seconds);
    const std::string path = (fs::path(req.out) / partial_file_name(def.name, req.shard)).string();
    write_files_atomic({{path, dump_json(partial_json(def, cfg, shard, info), -1) + "\n"}});
    std::printf("wrote: %s\n", path.c_str());
    return 0;
  }

  print_and_write(def, cfg, r, info, req.out);
  return 0;
}

/// main() of a standalone study program: the same options as `kvq study <name>`; bad
/// input prints one line on stderr and returns 2, other failures return 1.
inline int run_standalone(const study_def& def, int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string command_line = argc > 0 ? argv[0] : def.name;
  for (const auto& a : args) command_line += " " + a;
  try {
    return run_from_command_line(def, args, command_line);
  } catch (const usage_error& e) {
    std::fprintf(stderr, "%s: %s\n", argc > 0 ? argv[0] : def.name.c_str(), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", argc > 0 ? argv[0] : def.name.c_str(), e.what());
    return 1;
  }
}

}  // namespace kvq::study
