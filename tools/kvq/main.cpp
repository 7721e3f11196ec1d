// kvq — command-line front end: run the studies, list the formats, plan KV memory,
// verify dumped tensors.
//
// Exit status: 0 success, 2 bad input (one line on stderr naming the problem and the
// allowed values; nothing written), 1 anything else (I/O failures during a run).
#include "studies/registry.hpp"

#include "mma.hpp"
#include "subcommands.hpp"

#include <kvq/config.hpp>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

namespace {

using kvq::study::usage_error;

const char* const kMainHelp =
    "kvq " KVQ_VERSION_STRING
    " — bit-exact emulation of low-precision KV-cache formats, and studies of what they do\n"
    "\n"
    "usage: kvq <command> [options]\n"
    "\n"
    "commands:\n"
    "  study <name>   run a study (outliers, sinks, citations, policy, rotation); `kvq study --help`\n"
    "  formats        the number formats kvq emulates, from the format traits\n"
    "  memory         KV-cache bytes per token and the largest context/batch that fits, per scheme\n"
    "  verify         compare dumped .npy tensors from a GPU kernel with the emulator, bit for bit\n"
    "  mma            tensor-core inner products d = a.b + c as a given GPU computes them\n"
    "\n"
    "  kvq <command> --help   shows the options of a command\n"
    "  kvq --version          prints the library version\n"
    "\n"
    "exit status: 0 ok, 2 bad input (one line on stderr), 1 other failure\n";

bool is_help(const std::string& a) { return a == "--help" || a == "-h" || a == "help"; }

std::string study_list_help() {
  std::string s =
      "usage: kvq study <name> [--quick] [--out DIR] [--threads N] [--seed S] [--GRIDPARAM v1,v2,...]\n"
      "\n"
      "studies:\n";
  for (const auto& d : kvq::study::all_studies()) {
    char line[512];
    std::snprintf(line, sizeof line, "  %-10s %s\n", d.name.c_str(), d.summary.c_str());
    s += line;
  }
  s +=
      "\n"
      "options (every study):\n"
      "  --quick        small grid (seconds); the defaults are the full grid\n"
      "  --out DIR      also write DIR/<study>.csv (+ extra tables) and DIR/<study>.json\n"
      "                 (configuration, grid, seed, library version, timing); files appear only\n"
      "                 complete (written under a temporary name, then renamed)\n"
      "  --threads N    worker threads (default: all hardware threads); results are\n"
      "                 bit-identical for any N\n"
      "  --seed S       seed of the synthetic data (default 1)\n"
      "\n"
      "  kvq study <name> --help   lists the study's grid parameters and output columns\n";
  return s;
}

std::string param_kind_text(kvq::study::param_kind k) {
  using kvq::study::param_kind;
  switch (k) {
    case param_kind::int_list: return "integers";
    case param_kind::real_list: return "numbers";
    case param_kind::name_list: return "names";
    case param_kind::integer: return "integer";
    case param_kind::real: return "number";
  }
  return "";
}

std::string study_help(const kvq::study::study_def& d) {
  std::string s = "usage: kvq study " + d.name +
                  " [--quick] [--out DIR] [--threads N] [--seed S] [grid options]\n\n" + d.summary +
                  "\n\n" + d.description + "\n\ngrid options (comma-separated lists; 1k = 1024):\n";
  for (const auto& p : d.params) {
    s += "  --" + p.name + " (" + param_kind_text(p.kind) + ")  " + p.help + "\n";
    s += "      default: " + p.full_default;
    if (!p.quick_default.empty() && p.quick_default != p.full_default) s += "   --quick: " + p.quick_default;
    s += "\n";
    if (!p.allowed.empty()) s += "      allowed: " + kvq::study::join(p.allowed) + "\n";
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
  s += "\ncommon options: see `kvq study --help`\n";
  return s;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[64];
  std::tm tm{};
#if defined(_WIN32)
  gmtime_s(&tm, &t);
#else
  gmtime_r(&t, &tm);
#endif
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// Make sure DIR exists and accepts files before the (possibly long) run starts.
void check_out_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path p(dir);
  if (fs::exists(p, ec) && !fs::is_directory(p, ec))
    throw usage_error("--out " + dir + ": exists and is not a directory (give a directory to write the CSV/JSON into)");
  if (!fs::exists(p, ec)) {
    fs::create_directories(p, ec);
    if (ec) throw usage_error("--out " + dir + ": cannot create directory (" + ec.message() + ")");
  }
  fs::path probe = p / ".kvq-write-probe.tmp";
  std::FILE* f = std::fopen(probe.string().c_str(), "wb");
  if (!f) throw usage_error("--out " + dir + ": directory is not writable (" + std::strerror(errno) + ")");
  std::fclose(f);
  fs::remove(probe, ec);
}

int cmd_study(const std::vector<std::string>& args, const std::string& command_line) {
  using namespace kvq::study;
  if (args.empty() || is_help(args[0])) {
    std::fputs(study_list_help().c_str(), stdout);
    if (args.empty()) return 2;
    return 0;
  }
  const study_def* def = find_study(args[0]);
  if (!def) {
    std::vector<std::string> names;
    for (const auto& d : all_studies()) names.push_back(d.name);
    throw usage_error("unknown study '" + args[0] + "' (allowed: " + join(names) + ")");
  }
  bool quick = false;
  std::string out;
  unsigned threads = default_threads();
  std::uint64_t seed = 1;
  std::vector<std::pair<std::string, std::string>> overrides;
  for (std::size_t i = 1; i < args.size(); ++i) {
    std::string a = args[i];
    if (is_help(a)) {
      std::fputs(study_help(*def).c_str(), stdout);
      return 0;
    }
    if (a == "--quick") {
      quick = true;
      continue;
    }
    if (a.rfind("--", 0) != 0)
      throw usage_error("study " + def->name + ": unexpected argument '" + a + "' (options start with --; see kvq study " +
                        def->name + " --help)");
    std::string key = a.substr(2), val;
    auto eq = key.find('=');
    if (eq != std::string::npos) {
      val = key.substr(eq + 1);
      key = key.substr(0, eq);
    } else {
      if (i + 1 >= args.size()) throw usage_error("study " + def->name + ": option --" + key + " needs a value");
      val = args[++i];
    }
    if (key == "out") {
      out = val;
    } else if (key == "threads") {
      long long t;
      if (!parse_int(val, t) || t < 1 || t > 4096)
        throw usage_error("--threads: '" + val + "' is not a valid thread count (allowed: 1 to 4096)");
      threads = static_cast<unsigned>(t);
    } else if (key == "seed") {
      char* end = nullptr;
      errno = 0;
      unsigned long long s = std::strtoull(val.c_str(), &end, 10);
      if (val.empty() || val[0] == '-' || errno || *end)
        throw usage_error("--seed: '" + val + "' is not a valid seed (allowed: 0 to 18446744073709551615)");
      seed = s;
    } else {
      overrides.emplace_back(key, val);
    }
  }
  config cfg = resolve(*def, quick, seed, overrides);
  if (!out.empty()) check_out_dir(out);

  std::printf("kvq %s — study %s (seed %llu, %s grid, %u thread%s)\n", KVQ_VERSION_STRING, def->name.c_str(),
              static_cast<unsigned long long>(seed), quick ? "quick" : "full", threads, threads == 1 ? "" : "s");
  std::printf("grid: %s\n", cfg.describe().c_str());
  std::fflush(stdout);

  progress prog(def->name, progress::stderr_is_terminal());
  context ctx{cfg, threads, &prog};
  std::string started = utc_now();
  auto t0 = std::chrono::steady_clock::now();
  result r = def->run(ctx);
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  prog.finish();

  std::printf("setup: %s\n", r.setup.dump(0).c_str());
  for (const auto& t : r.tables)
    if (t.terminal) print_table(t, stdout);
  if (!r.findings.empty()) {
    std::printf("\nfindings:\n");
    for (const auto& f : r.findings) std::printf("  * %s\n", f.c_str());
  }
  std::printf("\ntime: %.2f s\n", secs);

  if (!out.empty()) {
    namespace fs = std::filesystem;
    json meta = json::object();
    meta.set("study", def->name);
    meta.set("summary", def->summary);
    meta.set("kvq_version", KVQ_VERSION_STRING);
    meta.set("command", command_line);
    meta.set("seed", static_cast<unsigned long long>(seed));
    meta.set("quick", quick);
    meta.set("threads", threads);
    meta.set("grid", cfg.to_json());
    meta.set("setup", r.setup);
    json tabs = json::array();
    std::vector<std::pair<std::string, std::string>> files;
    for (const auto& t : r.tables) {
      std::string fname = def->name + (t.name.empty() ? "" : "_" + t.name) + ".csv";
      json tj = json::object();
      tj.set("file", fname);
      tj.set("title", t.title);
      tj.set("rows", static_cast<unsigned long long>(t.rows.size()));
      json cols = json::array();
      for (const auto& c : t.columns) {
        json cj = json::object();
        cj.set("name", c.name);
        cj.set("help", c.help);
        cols.push(cj);
      }
      tj.set("columns", cols);
      tabs.push(tj);
      files.emplace_back((fs::path(out) / fname).string(), to_csv(t));
    }
    meta.set("tables", tabs);
    meta.set("findings", json(r.findings));
    json timing = json::object();
    timing.set("started_utc", started);
    timing.set("wall_seconds", secs);
    meta.set("timing", timing);
    files.emplace_back((fs::path(out) / (def->name + ".json")).string(), meta.dump(2) + "\n");
    for (const auto& f : files) write_file_atomic(f.first, f.second);
    std::printf("wrote:");
    for (const auto& f : files) std::printf(" %s", f.first.c_str());
    std::printf("\n");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string command_line = "kvq";
  for (const auto& a : args) command_line += " " + a;
  try {
    if (args.empty()) {
      std::fputs(kMainHelp, stderr);
      return 2;
    }
    const std::string cmd = args[0];
    std::vector<std::string> rest(args.begin() + 1, args.end());
    if (is_help(cmd)) {
      if (cmd == "help" && !rest.empty()) {  // `kvq help study` == `kvq study --help`
        const std::string& sub = rest[0];
        if (sub == "study") return cmd_study({"--help"}, command_line);
        if (sub == "formats") return kvq::cli::cmd_formats({"--help"});
        if (sub == "memory") return kvq::cli::cmd_memory({"--help"});
        if (sub == "verify") return kvq::cli::cmd_verify({"--help"}, argv[0]);
        throw usage_error("help: unknown command '" + sub + "' (allowed: study, formats, memory, verify)");
      }
      std::fputs(kMainHelp, stdout);
      return 0;
    }
    if (cmd == "--version" || cmd == "version") {
      std::printf("kvq %s\n", KVQ_VERSION_STRING);
      return 0;
    }
    if (cmd == "study") return cmd_study(rest, command_line);
    if (cmd == "formats") return kvq::cli::cmd_formats(rest);
    if (cmd == "memory") return kvq::cli::cmd_memory(rest);
    if (cmd == "verify") return kvq::cli::cmd_verify(rest, argv[0]);
    if (cmd == "mma") return kvq::cli::cmd_mma(rest);
    throw usage_error("unknown command '" + cmd + "' (allowed: study, formats, memory, verify, mma; see kvq --help)");
  } catch (const usage_error& e) {
    std::fprintf(stderr, "kvq: %s\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {
    // The library's checked API names the problem (shapes, sizes, names).
    std::fprintf(stderr, "kvq: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kvq: error: %s\n", e.what());
    return 1;
  }
}
