// kvq-mpi — a study over MPI ranks:
//
//   mpirun -n N kvq-mpi study <name> [--quick] [--out DIR] [--threads T] [--seed S] [grid options]
//
// Rank r computes shard r+1 of N of the study's main phase (kvq/study/shard.hpp), exactly
// as `kvq study <name> --shard r+1/N` would; rank 0 gathers the partial results in memory
// (MPI_Gatherv of their JSON text), merges them as `kvq study merge` does, prints the
// tables and writes the same CSVs as a single run (--threads is per rank). Bad input: one
// line on stderr (from the lowest rank that found it), exit status 2 on every rank,
// nothing written. Every rank checks its own command line, and that it is rank 0's, and
// the ranks agree on the outcome (MPI_Allreduce) before any other collective call, so a
// rank started with other arguments (mpirun's "A : B" form) stops the run instead of
// leaving the others waiting. A failed write of the standard output exits 1, as in kvq.
// The studies, compiled once in the kvq_studies library (studies/).
#include "studies.hpp"

#include <mpi.h>

#include <cerrno>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include <kvq/config.hpp>
#include <kvq/study.hpp>

namespace {

using namespace kvq::study;

const char* const kUsage =
    "usage: mpirun -n N kvq-mpi study <name> [--quick] [--out DIR] [--threads T] [--seed S] [grid options]\n"
    "  every rank computes its share of the study's tasks; rank 0 writes the files of a single run\n"
    "  (kvq study <name> --help lists a study's grid options)\n";

// Gathers every rank's text on rank 0 (empty elsewhere).
std::vector<std::string> gather_texts(const std::string& mine, int rank, int size) {
  if (mine.size() > 0x7fffffffu) throw std::runtime_error("partial result of rank " + std::to_string(rank) + " exceeds 2 GiB");
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(rank == 0 ? static_cast<std::size_t>(size) : 0u);
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::vector<int> displs;
  std::vector<char> all;
  if (rank == 0) {
    long long total = 0;
    for (int l : lens) {
      displs.push_back(static_cast<int>(total));
      total += l;
    }
    if (total > 0x7fffffffLL) throw std::runtime_error("partial results exceed 2 GiB in all");
    all.resize(static_cast<std::size_t>(total));
  }
  MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  std::vector<std::string> texts;
  if (rank == 0)
    for (int r = 0; r < size; ++r)
      texts.emplace_back(all.data() + displs[static_cast<std::size_t>(r)],
                         static_cast<std::size_t>(lens[static_cast<std::size_t>(r)]));
  return texts;
}

// What a rank runs, from its command line: checked on every rank (bad input throws
// usage_error) before the ranks agree.
struct prepared {
  bool usage = false;  // kvq-mpi --help
  const study_def* def = nullptr;
  run_request req;
  config cfg;
};

prepared prepare(const std::vector<std::string>& args) {
  prepared p;
  if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
    p.usage = true;
    return p;
  }
  if (args.size() < 2 || args[0] != "study") throw usage_error("expected: study <name> [options] (see --help)");
  p.def = find_study(args[1]);
  if (!p.def) {
    std::vector<std::string> names;
    for (const auto& d : all_studies()) names.push_back(d.name);
    throw usage_error("unknown study '" + args[1] + "' (allowed: " + join(names) + ")");
  }
  p.req = parse_run_request(*p.def, std::vector<std::string>(args.begin() + 2, args.end()));
  if (p.req.help) return p;
  const study_def* def = p.def;
  const run_request& req = p.req;
  if (req.sharded) throw usage_error("--shard: kvq-mpi shards by rank (rank r computes shard r+1 of N); drop --shard");
  if (req.kv_given)
    throw usage_error("--kv: kvq-mpi does not run on captured Q/K/V (run `kvq study " + def->name + " --kv FILE` in one process)");
  p.cfg = resolve(*def, req.quick, req.seed, req.overrides);
  check_run_memory(*def, p.cfg, req);  // per rank: each holds its own tasks' data
  return p;
}

// The command line of rank 0 on every rank.
std::string rank0_text(const std::string& mine, int rank) {
  unsigned long long n = rank == 0 ? mine.size() : 0;
  MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  std::string text(static_cast<std::size_t>(n), '\0');
  if (rank == 0) text = mine;
  for (std::size_t off = 0; off < text.size(); off += 0x40000000u) {
    const int len = static_cast<int>(std::min<std::size_t>(text.size() - off, 0x40000000u));
    MPI_Bcast(&text[off], len, MPI_CHAR, 0, MPI_COMM_WORLD);
  }
  return text;
}

// Every rank's verdict on its command line, agreed by all: the lowest rank whose
// arguments are bad prints its problem (else the lowest whose arguments differ from
// rank 0's says so) and every rank throws agreed_failure, to exit 2.
struct agreed_failure {};

void agree(bool bad_input, const std::string& problem, bool differs, int rank, int size) {
  int first[2] = {bad_input ? rank : size, differs ? rank : size};
  MPI_Allreduce(MPI_IN_PLACE, first, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first[0] < size) {
    if (rank == first[0]) std::fprintf(stderr, "kvq-mpi: %s%s\n", rank == 0 ? "" : ("rank " + std::to_string(rank) + ": ").c_str(), problem.c_str());
    throw agreed_failure{};
  }
  if (first[1] < size) {
    if (rank == first[1])
      std::fprintf(stderr, "kvq-mpi: rank %d: its command line differs from rank 0's (every rank must run the same command)\n", rank);
    throw agreed_failure{};
  }
}

int run(int argc, char** argv, int rank, int size) {
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string command_line = "kvq-mpi";
  for (const auto& a : args) command_line += " " + a;
  // Each argument with its length, so that no two argument lists give the same text.
  std::string args_text;
  for (const auto& a : args) args_text += std::to_string(a.size()) + ":" + a;
  prepared p;
  std::string problem;
  bool bad_input = false;
  try {
    p = prepare(args);
  } catch (const usage_error& e) {
    bad_input = true;
    problem = e.what();
  }
  agree(bad_input, problem, rank0_text(args_text, rank) != args_text, rank, size);
  if (p.usage) {
    if (rank == 0) std::fputs(kUsage, stdout);
    return 0;
  }
  const study_def* def = p.def;
  const run_request& req = p.req;
  if (req.help) {
    if (rank == 0) std::fputs(study_help(*def, "mpirun -n N kvq-mpi study").c_str(), stdout);
    return 0;
  }
  const config& cfg = p.cfg;
  // --out is checked on rank 0, which writes; every rank learns the outcome, so that no
  // rank computes (or waits in the gather) for a run that cannot be written.
  int out_ok = 1;
  std::string out_problem;
  if (rank == 0 && !req.out.empty()) {
    try {
      check_out_dir(req.out);
    } catch (const usage_error& e) {
      out_ok = 0;
      out_problem = e.what();
    }
  }
  MPI_Bcast(&out_ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!out_ok) throw usage_error(out_problem);

  if (rank == 0) {
    std::printf("kvq %s — study %s over %d MPI rank%s (seed %llu, %s grid, %u thread%s per rank)\n",
                KVQ_VERSION_STRING, def->name.c_str(), size, size == 1 ? "" : "s",
                static_cast<unsigned long long>(req.seed), req.quick ? "quick" : "full", req.threads,
                req.threads == 1 ? "" : "s");
    std::printf("grid: %s\n", cfg.describe().c_str());
    std::fflush(stdout);
  }
  progress prog(def->name, rank == 0 ? progress::mode_for_stderr(req.quiet) : progress_mode::off);
  shard_state shard;
  shard.spec.index = static_cast<unsigned>(rank) + 1;
  shard.spec.count = static_cast<unsigned>(size);
  const context ctx{cfg, req.threads, rank == 0 ? &prog : nullptr, &shard};
  run_info info;
  info.command = command_line;
  info.seed = req.seed;
  info.quick = req.quick;
  info.threads = req.threads;
  info.started_utc = utc_now();
  const double t0 = MPI_Wtime();
  def->run(ctx);
  info.wall_seconds = MPI_Wtime() - t0;
  if (rank == 0) prog.finish();

  const std::vector<std::string> texts = gather_texts(dump_json(partial_json(*def, cfg, shard, info), -1), rank, size);
  if (rank != 0) return 0;
  std::vector<partial_result> parts(texts.size());
  std::vector<const partial_result*> ptrs;
  for (std::size_t r = 0; r < texts.size(); ++r) {
    parts[r].path = "rank " + std::to_string(r);
    parts[r].data = json::parse(texts[r]);
    parts[r].spec.index = static_cast<unsigned>(r) + 1;
    parts[r].spec.count = static_cast<unsigned>(size);
    ptrs.push_back(&parts[r]);
  }
  merged_run m = merge_study(*def, ptrs, command_line);
  // The run as a whole: its own command, start and wall time (not the sum over ranks).
  m.info = info;
  m.info.wall_seconds = MPI_Wtime() - t0;
  print_and_write(*def, m.cfg, m.res, m.info, req.out);
  return 0;
}

// A full disk, /dev/full or a closed pipe shows only when the buffered output is flushed
// or closed: a rank whose output was lost does not exit 0 (as kvq's finish_output).
int finish_output(int rc) {
  errno = 0;
  const bool flush_failed = std::fflush(stdout) != 0;
  const int e = errno;
  const bool failed = flush_failed || std::ferror(stdout) != 0;
  const bool close_failed = std::fclose(stdout) != 0;
  if (failed || close_failed) {
    const int why = failed ? e : errno;
    std::fprintf(stderr, "kvq-mpi: error: cannot write the standard output%s%s\n", why ? ": " : "",
                 why ? std::strerror(why) : "");
    return rc == 0 ? 1 : rc;
  }
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int rc = 0;
  try {
    rc = run(argc, argv, rank, size);
  } catch (const agreed_failure&) {
    rc = 2;  // every rank is here, the problem printed once
  } catch (const usage_error& e) {
    // After the agreement every rank holds the same command and grid, so a usage error
    // now (a bad --out, found on rank 0 and broadcast) is every rank's.
    if (rank == 0) std::fprintf(stderr, "kvq-mpi: %s\n", e.what());
    rc = 2;
  } catch (const std::exception& e) {
    // One rank failed while the others may wait in the gather: stop them all.
    std::fprintf(stderr, "kvq-mpi: rank %d: error: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  rc = finish_output(rc);
  MPI_Finalize();
  return rc;
}
