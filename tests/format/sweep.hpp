// tests/format/sweep.hpp — parallel sweeps over the 2^32 float bit patterns and
// mismatch bookkeeping for the format tests.
//
// KVQ_EXHAUSTIVE_STRIDE=n (default 1) visits every n-th bit pattern only; use an odd
// n during development. KVQ_TEST_THREADS=n overrides std::thread::hardware_concurrency.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <ctime>
#include <cstdint>
#include <cstdlib>
#include <iomanip>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "oracle.hpp"

namespace kvqtest {

inline std::uint64_t env_u64(const char* name, std::uint64_t fallback) {
  const char* s = std::getenv(name);
  if (s == nullptr || *s == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 0);
  return (end != s && v > 0) ? static_cast<std::uint64_t>(v) : fallback;
}

inline std::uint64_t exhaustive_stride() { return env_u64("KVQ_EXHAUSTIVE_STRIDE", 1); }

inline unsigned thread_count() {
  const unsigned hc = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<unsigned>(env_u64("KVQ_TEST_THREADS", hc));
}

struct mismatch {
  std::uint64_t input;  // bit pattern of the input
  unsigned expected;    // oracle
  unsigned got;         // kvq
  int cuda;             // CUDA's result, -1 when not compared
  std::string what;     // which comparison failed
};

// Per-thread mismatch log: counts everything, keeps the first few (lowest inputs).
struct mismatch_log {
  static constexpr std::size_t keep = 8;
  std::uint64_t checked = 0;
  std::uint64_t count = 0;
  std::vector<mismatch> first;

  void add(std::uint64_t input, unsigned expected, unsigned got, int cuda, const char* what) {
    ++count;
    if (first.size() < keep) first.push_back({input, expected, got, cuda, what});
  }
  void merge(const mismatch_log& o) {
    checked += o.checked;
    count += o.count;
    first.insert(first.end(), o.first.begin(), o.first.end());
    std::sort(first.begin(), first.end(),
              [](const mismatch& a, const mismatch& b) { return a.input < b.input; });
    if (first.size() > keep) first.resize(keep);
  }
  std::string report(int input_hex_digits) const {
    std::ostringstream os;
    os << count << " mismatches in " << checked << " inputs";
    for (const auto& m : first) {
      os << "\n  input " << hex(m.input, input_hex_digits);
      if (input_hex_digits == 8) {
        os << " (" << std::setprecision(9) << float_from_bits(static_cast<std::uint32_t>(m.input)) << ")";
      } else {
        os << " (" << std::setprecision(17) << double_from_bits(m.input) << ")";
      }
      os << " " << m.what << ": expected " << hex(m.expected, 2) << " got " << hex(m.got, 2);
      if (m.cuda >= 0) os << " cuda " << hex(static_cast<unsigned>(m.cuda), 2);
    }
    return os.str();
  }
};

// Runs body(first, last, stride, log) over [begin, end) split into chunks handed out to
// thread_count() threads. Every visited u satisfies u % stride == begin % stride.
template <class Body>
mismatch_log parallel_sweep(std::uint64_t begin, std::uint64_t end, std::uint64_t stride,
                            Body body) {
  const unsigned nthreads = thread_count();
  const std::uint64_t nchunks = 64ull * nthreads;
  std::uint64_t chunk = (end - begin + nchunks - 1) / nchunks;
  chunk = (chunk + stride - 1) / stride * stride;  // chunk starts stay on the stride grid
  std::atomic<std::uint64_t> next{begin};
  std::vector<mismatch_log> logs(nthreads);
  auto worker = [&](unsigned t) {
    for (;;) {
      const std::uint64_t first = next.fetch_add(chunk);
      if (first >= end) break;
      const std::uint64_t last = std::min(end, first + chunk);
      body(first, last, stride, logs[t]);
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < nthreads; ++t) threads.emplace_back(worker, t);
  worker(0);
  for (auto& th : threads) th.join();
  mismatch_log all;
  for (auto& l : logs) all.merge(l);
  return all;
}

// Wall time and process CPU time (all threads): on a shared machine the CPU time
// divided by the thread count is the better estimate of an unloaded run.
struct stopwatch {
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  std::clock_t c0 = std::clock();
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  double cpu_seconds() const { return static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC; }
};

}  // namespace kvqtest
