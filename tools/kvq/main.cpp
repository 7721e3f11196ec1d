// kvq — command-line front end: run the studies, list the formats, plan KV memory,
// verify dumped tensors.
//
// Exit status: 0 success, 2 bad input (one line on stderr naming the problem and the
// allowed values; nothing written), 1 anything else (I/O failures during a run).
// The studies, compiled once in the kvq_studies library (studies/).
#include "studies.hpp"

#include "mma.hpp"
#include "subcommands.hpp"

#include <kvq/config.hpp>
#include <kvq/core/isa.hpp>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <string>
#include <unistd.h>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace {

using kvq::study::usage_error;

// The top-level help; the study names come from the registry of studies, so the list
// cannot miss one.
std::string main_help() {
  std::string names;
  for (const auto& d : kvq::study::all_studies()) names += (names.empty() ? "" : ", ") + d.name;
  return "kvq " KVQ_VERSION_STRING
         " — bit-exact emulation of low-precision KV-cache formats, and studies of what they do\n"
         "\n"
         "usage: kvq <command> [options]\n"
         "\n"
         "commands:\n"
         "  study <name>   run a study (" + names + "); `kvq study --help`\n"
         "  formats        the number formats kvq emulates, from the format traits\n"
         "  memory         KV-cache bytes per token and the largest context/batch that fits, per scheme\n"
         "  cost           prefill time (TTFT) with a quantized KV cache vs bf16, from a roofline model\n"
         "  verify         compare dumped .npy tensors from a GPU kernel with the emulator, bit for bit\n"
         "  mma            tensor-core inner products d = a.b + c as a given GPU computes them\n"
         "\n"
         "  kvq <command> --help   shows the options of a command\n"
         "  kvq --version          prints the library version\n"
         "\n"
         "exit status: 0 ok, 2 bad input (one line on stderr), 1 other failure\n";
}

bool is_help(const std::string& a) { return a == "--help" || a == "-h" || a == "help"; }

std::string study_list_help() {
  std::string s =
      "usage: kvq study <name> [--quick] [--quiet] [--out DIR] [--threads N] [--seed S] [--shard I/N] [--GRIDPARAM v1,v2,...]\n"
      "       kvq study merge DIR... [--out DIR]\n"
      "\n"
      "studies:\n";
  for (const auto& d : kvq::study::all_studies()) {
    char line[512];
    std::snprintf(line, sizeof line, "  %-10s %s\n", d.name.c_str(), d.summary.c_str());
    s += line;
  }
  s += "  model      a real decoder (SmolLM2-135M) with every layer's KV in a scheme: perplexity, KL, attention\n"
       "             ranks, sinks, false citations; runs in Python (python -m kvq.model_study, needs torch)\n";
  s +=
      "\n"
      "options (every study):\n";
  s += kvq::study::common_options_help();
  s +=
      "\n"
      "  kvq study <name> --help   lists the study's grid parameters and output columns\n"
      "  kvq study merge --help    merging the partial results of --shard runs\n";
  return s;
}

const char* const kMergeHelp =
    "usage: kvq study merge DIR... [--out DIR]\n\n"
    "Merges the partial results <study>.shard-I-of-N.json of `kvq study <name> --shard I/N`\n"
    "runs (shards 1..N, from one or several directories) into the CSV/JSON files a single\n"
    "run writes, in --out DIR (default: the first DIR). The CSVs are byte-identical to a\n"
    "single run's; the JSON differs only in command, threads and timing. Every shard must\n"
    "be present once, from the same study, grid, seed and library version; otherwise one\n"
    "line on stderr names the problem, the exit status is 2 and nothing is written.\n";

int cmd_study_merge(const std::vector<std::string>& args, const std::string& command_line) {
  using namespace kvq::study;
  std::vector<std::string> dirs;
  std::string out;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (is_help(args[i])) {
      std::fputs(kMergeHelp, stdout);
      return 0;
    }
    if (args[i] == "--out") {
      if (i + 1 >= args.size() || args[i + 1].empty()) throw usage_error("merge: --out needs a directory");
      out = args[++i];
    } else if (args[i].rfind("--", 0) == 0) {
      throw usage_error("merge: unknown option '" + args[i] + "' (allowed: --out DIR)");
    } else {
      dirs.push_back(args[i]);
    }
  }
  if (dirs.empty()) throw usage_error("merge: no directory given (usage: kvq study merge DIR... [--out DIR])");
  if (out.empty()) out = dirs.front();
  const file_set files = merge_partials(dirs, out, command_line, [](const std::string& n) { return find_study(n); });
  std::printf("wrote:");
  for (const auto& f : files) std::printf(" %s", f.first.c_str());
  std::printf("\n");
  return 0;
}

// `kvq study model` is the Python study kvq.model_study (it needs torch and transformers):
// the command hands its arguments to `$KVQ_PYTHON -m kvq.model_study` (default python3),
// which takes the same --quick/--out/--seed options and exits 2 on bad ones.
int exec_model_study(const std::vector<std::string>& rest) {
  const char* env = std::getenv("KVQ_PYTHON");
  const std::string python = env && *env ? env : "python3";
  std::vector<std::string> argv_s = {python, "-m", "kvq.model_study"};
  argv_s.insert(argv_s.end(), rest.begin(), rest.end());
  std::vector<char*> argv_c;
  for (auto& a : argv_s) argv_c.push_back(a.data());
  argv_c.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  ::execvp(argv_c[0], argv_c.data());
  throw usage_error("study model: runs in Python (python -m kvq.model_study); cannot start '" + python +
                    "': " + std::strerror(errno) + " (set KVQ_PYTHON to a python with kvq, torch and transformers)");
}

int cmd_study(const std::vector<std::string>& args, const std::string& command_line) {
  using namespace kvq::study;
  if (args.empty()) {
    std::vector<std::string> names;
    for (const auto& d : all_studies()) names.push_back(d.name);
    throw usage_error("study: no study named (allowed: " + join(names) + ", merge; see kvq study --help)");
  }
  if (is_help(args[0])) {
    std::fputs(study_list_help().c_str(), stdout);
    return 0;
  }
  if (args[0] == "model") return exec_model_study(std::vector<std::string>(args.begin() + 1, args.end()));
  if (args[0] == "merge") return cmd_study_merge(std::vector<std::string>(args.begin() + 1, args.end()), command_line);
  const study_def* def = find_study(args[0]);
  if (!def) {
    std::vector<std::string> names;
    for (const auto& d : all_studies()) names.push_back(d.name);
    throw usage_error("unknown study '" + args[0] + "' (allowed: " + join(names) + ")");
  }
  return run_from_command_line(*def, std::vector<std::string>(args.begin() + 1, args.end()), command_line);
}

}  // namespace

static int run_command(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string command_line = "kvq";
  for (const auto& a : args) command_line += " " + a;
  try {
    // KVQ_ISA=baseline|x86-64-v3 picks the copy of the bulk kernels (kvq/core/isa.hpp; the
    // same variable and names as Python's); unset or empty: the best this CPU has.
    if (const char* isa = std::getenv("KVQ_ISA"); isa != nullptr && *isa != '\0') {
      try {
        kvq::set_isa(kvq::parse_isa(isa));
      } catch (const std::invalid_argument& e) {
        throw usage_error(std::string("KVQ_ISA: ") + e.what());
      }
    }
    if (args.empty()) {
      std::fputs(main_help().c_str(), stderr);
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
        if (sub == "cost") return kvq::cli::cmd_cost({"--help"});
        if (sub == "verify") return kvq::cli::cmd_verify({"--help"}, argv[0]);
        throw usage_error("help: unknown command '" + sub + "' (allowed: study, formats, memory, cost, verify)");
      }
      std::fputs(main_help().c_str(), stdout);
      return 0;
    }
    if (cmd == "--version" || cmd == "version") {
      std::printf("kvq %s\n", KVQ_VERSION_STRING);
      return 0;
    }
    if (cmd == "study") return cmd_study(rest, command_line);
    if (cmd == "formats") return kvq::cli::cmd_formats(rest);
    if (cmd == "memory") return kvq::cli::cmd_memory(rest);
    if (cmd == "cost") return kvq::cli::cmd_cost(rest);
    if (cmd == "verify") return kvq::cli::cmd_verify(rest, argv[0]);
    if (cmd == "mma") return kvq::cli::cmd_mma(rest);
    throw usage_error("unknown command '" + cmd + "' (allowed: study, formats, memory, cost, verify, mma; see kvq --help)");
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

namespace {

// A full disk, /dev/full or a closed pipe shows only when the buffered output is flushed
// or closed: check both, so a command whose output was lost does not exit 0.
int finish_output(int rc) {
  std::cout.flush();
  errno = 0;
  const bool flush_failed = std::fflush(stdout) != 0;  // first: its errno names the reason
  const int e = errno;
  const bool failed = flush_failed || std::ferror(stdout) != 0 || std::cout.fail();
  const bool close_failed = std::fclose(stdout) != 0;
  if (failed || close_failed) {
    const int why = failed ? e : errno;
    std::fprintf(stderr, "kvq: error: cannot write the standard output%s%s\n", why ? ": " : "",
                 why ? std::strerror(why) : "");
    return rc == 0 ? 1 : rc;
  }
  if (std::fflush(stderr) != 0 || std::ferror(stderr) != 0) return rc == 0 ? 1 : rc;
  return rc;
}

}  // namespace

// The studies allocate and free arrays of up to hundreds of MB per cell (the keys of one
// 128k-token head are 64 MB, and each scheme's store holds its own). By default glibc
// hands such blocks back to the kernel on free (mmap above a threshold of at most 32 MB,
// the heap's top trimmed above 128 KiB), and the next cell faults every page in again,
// zero-filled: a fifth of the outliers study's CPU time, most of it in the kernel. The
// command keeps freed memory for its own reuse instead (blocks below 1 GiB come from the
// heap and up to 1 GiB of free heap stays mapped). Nothing computed changes; the peak
// resident size grows a little (outliers default grid: 513 to 546 MB).
static void keep_freed_memory() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_THRESHOLD, 1 << 30);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

int main(int argc, char** argv) {
  keep_freed_memory();
  return finish_output(run_command(argc, argv));
}
