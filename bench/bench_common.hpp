// bench/bench_common.hpp — shared pieces of kvq's benchmark programs: command-line
// options, deterministic input data, and the summary table printed after Google
// Benchmark's own report (ns/value, values/s, time relative to a memcpy of the same
// array and to CUDA's host conversion functions, all measured in the same run).
#pragma once

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvq/core/isa.hpp>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

namespace kvqbench {

struct options {
  std::size_t mib = 256;  // size of the float input array
  bool quick = false;     // tiny array, minimal timing: proves the program runs (CI)
  std::size_t values() const { return mib * (std::size_t{1} << 20) / sizeof(float); }
};

// Reads and removes kvq's own options, then hands the rest to Google Benchmark:
//   --quick     1 MiB array and --benchmark_min_time=0.01 (a few seconds in all)
//   --mib=N     input array of N MiB of float (default 256)
//   --isa=NAME  the copy of the bulk kernels: baseline or x86-64-v3 (kvq/core/isa.hpp;
//               default the best this CPU has); the one used is printed first
inline options init(int& argc, char** argv) {
  options o;
  static std::vector<char*> args;
  static std::string min_time = "--benchmark_min_time=0.01";
  args.assign(argv, argv + argc);
  std::vector<char*> rest{args[0]};
  for (int i = 1; i < argc; ++i) {
    const char* a = args[static_cast<std::size_t>(i)];
    if (std::strcmp(a, "--quick") == 0) {
      o.quick = true;
    } else if (std::strncmp(a, "--isa=", 6) == 0) {
      try {
        kvq::set_isa(kvq::parse_isa(a + 6));
      } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "--isa: %s\n", e.what());
        std::exit(2);
      }
    } else if (std::strncmp(a, "--mib=", 6) == 0) {
      o.mib = static_cast<std::size_t>(std::strtoull(a + 6, nullptr, 10));
    } else {
      rest.push_back(args[static_cast<std::size_t>(i)]);
    }
  }
  if (o.quick) {
    o.mib = 1;
    rest.insert(rest.begin() + 1, &min_time[0]);  // explicit flags given later still win
  }
  if (o.mib == 0) {
    std::fprintf(stderr, "--mib must be a positive number of MiB\n");
    std::exit(2);
  }
  args = rest;
  argc = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&argc, args.data());
  if (benchmark::ReportUnrecognizedArguments(argc, args.data())) std::exit(2);
  std::printf("bulk kernels: %s\n", kvq::isa_name(kvq::active_isa()));
  return o;
}

// n samples of N(0, 1), identical on every run and machine with the same libm:
// Box–Muller over a counter-based generator (splitmix64 of seed and index).
inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}
inline std::vector<float> normal_floats(std::size_t n, std::uint64_t seed = 2024) {
  std::vector<float> v(n);
  const double two_pi = 6.283185307179586476925;
  for (std::size_t i = 0; i < n; i += 2) {
    // 53-bit uniforms; u1 in (0, 1] so the log is finite.
    const double u1 = (static_cast<double>(splitmix64(seed ^ (2 * i)) >> 11) + 1.0) * 0x1p-53;
    const double u2 = static_cast<double>(splitmix64(seed ^ (2 * i + 1)) >> 11) * 0x1p-53;
    const double r = std::sqrt(-2.0 * std::log(u1));
    v[i] = static_cast<float>(r * std::cos(two_pi * u2));
    if (i + 1 < n) v[i + 1] = static_cast<float>(r * std::sin(two_pi * u2));
  }
  return v;
}

// Keeps each benchmark's best CPU time per iteration (seconds), keyed by registered name.
// CPU time, not wall time: every benchmark is one thread, so on a quiet machine the two
// agree, and on a shared one CPU time leaves out the time the thread was not running.
// The best wall time is kept too, for the benchmarks that run several threads (CPU time
// there counts the calling thread only).
class collecting_reporter : public benchmark::ConsoleReporter {
 public:
  std::map<std::string, double> seconds;
  std::map<std::string, double> wall_seconds;
  collecting_reporter() : ConsoleReporter(use_color() ? OO_ColorTabular : OO_Tabular) {}
  static bool use_color() {
#if defined(__unix__) || defined(__APPLE__)
    return isatty(STDOUT_FILENO) != 0;
#else
    return false;
#endif
  }
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.error_occurred || r.run_type != Run::RT_Iteration || r.iterations <= 0) continue;
      const double t = r.cpu_accumulated_time / static_cast<double>(r.iterations);
      auto it = seconds.find(r.run_name.function_name);
      if (it == seconds.end() || t < it->second) seconds[r.run_name.function_name] = t;
      const double w = r.real_accumulated_time / static_cast<double>(r.iterations);
      auto iw = wall_seconds.find(r.run_name.function_name);
      if (iw == wall_seconds.end() || w < iw->second) wall_seconds[r.run_name.function_name] = w;
    }
  }
};

// One table line: a benchmark (by registered name) that processes `values` values, with
// the benchmarks it is compared with (empty: no such column entry).
struct row {
  std::string label;
  std::string bench;
  std::string memcpy_bench;  // time ratio t / t_memcpy
  std::string cuda_bench;    // speedup t_cuda / t
};

inline void print_table(const char* title, const collecting_reporter& rep, const std::vector<row>& rows,
                        std::size_t values) {
  auto find = [&](const std::string& name, double& t) {
    auto it = rep.seconds.find(name);
    if (name.empty() || it == rep.seconds.end()) return false;
    t = it->second;
    return true;
  };
  std::printf("\n%s\n", title);
  std::printf("%-38s %10s %12s %10s %10s\n", "", "ns/value", "values/s", "x memcpy", "CUDA/kvq");
  for (const row& r : rows) {
    double t = 0;
    if (!find(r.bench, t)) continue;
    const double nsv = t * 1e9 / static_cast<double>(values);
    std::printf("%-38s %10.3f %12.3e", r.label.c_str(), nsv, static_cast<double>(values) / t);
    double tm = 0, tc = 0;
    if (find(r.memcpy_bench, tm)) std::printf(" %10.2f", t / tm); else std::printf(" %10s", "-");
    if (find(r.cuda_bench, tc)) std::printf(" %10.1f", tc / t); else std::printf(" %10s", "-");
    std::printf("\n");
  }
  std::printf("x memcpy: time relative to memcpy of the same float array (lower is better);\n"
              "CUDA/kvq: CUDA host function's time over kvq's (higher is better).\n");
}

// The memcpy baseline: copies `n` floats from `src` to `dst` per iteration.
inline void register_memcpy(const std::string& name, const float* src, float* dst, std::size_t n) {
  benchmark::RegisterBenchmark(name.c_str(), [=](benchmark::State& st) {
    for (auto _ : st) {
      std::memcpy(dst, src, n * sizeof(float));
      benchmark::DoNotOptimize(dst);
      benchmark::ClobberMemory();
    }
    st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(n));
    st.SetBytesProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(n * sizeof(float)));
  })->Unit(benchmark::kMillisecond);
}

}  // namespace kvqbench
