/// \file
/// kvq/study/runner.hpp — the deterministic task runner: task i may run on any thread
/// in any order and writes only its own slot, so results never depend on --threads.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#include <kvq/study/progress.hpp>

namespace kvq::study {

// ---------------------------------------------------------------------------
// Deterministic task runner. Task i may run on any thread, in any order; it must
// write only to its own slot. Tasks are started largest-cost first so that long
// contexts do not end up last on one core.
/// std::thread::hardware_concurrency(), or 1 when unknown.
inline unsigned default_threads() {
  unsigned n = std::thread::hardware_concurrency();
  return n ? n : 1;
}

/// Runs fn(i) for i in [0, n) on `threads` threads (0: default_threads()), largest
/// cost[i] first when cost has n entries; advances prog (may be null) by cost[i] (or
/// 1) per task. Rethrows the first exception a task throws, after the running tasks end;
/// no further tasks are started once one has failed.
template <class Fn>
void run_tasks(std::size_t n, const std::vector<double>& cost, unsigned threads, progress* prog, Fn&& fn) {
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (cost.size() == n)
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t a, std::size_t b) { return cost[a] > cost[b]; });
  if (prog && !prog->planned()) {
    double tot = 0;
    for (std::size_t i = 0; i < n; ++i) tot += cost.size() == n ? cost[i] : 1.0;
    prog->set_total(tot);
  }
  std::atomic<std::size_t> next{0};
  std::exception_ptr err;
  std::mutex err_m;
  std::atomic<bool> failed{false};
  auto worker = [&] {
    for (;;) {
      std::size_t k = next.fetch_add(1);
      if (k >= n || failed.load()) return;
      std::size_t i = order[k];
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(err_m);
        if (!err) err = std::current_exception();
        failed = true;
        return;
      }
      if (prog) prog->advance(cost.size() == n ? cost[i] : 1.0);
    }
  };
  unsigned t = std::max(1u, std::min<unsigned>(threads ? threads : default_threads(),
                                               static_cast<unsigned>(std::max<std::size_t>(n, 1))));
  if (t == 1) {
    worker();
  } else {
    std::vector<std::thread> pool;
    pool.reserve(t);
    for (unsigned k = 0; k < t; ++k) pool.emplace_back(worker);
    for (auto& th : pool) th.join();
  }
  if (err) std::rethrow_exception(err);
}

}  // namespace kvq::study
