/// \file
/// kvq/study/runner.hpp — the deterministic task runner: task i may run on any thread
/// in any order and writes only its own slot, so results never depend on --threads.
#pragma once

#include <algorithm>
#include <cstddef>
#include <numeric>
#include <thread>
#include <vector>

#include <kvq/core/parallel.hpp>
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
  kvq::detail::parallel_tasks("kvq::study::run_tasks", n, threads ? threads : default_threads(), [&](std::size_t k) {
    const std::size_t i = order[k];
    fn(i);
    if (prog) prog->advance(cost.size() == n ? cost[i] : 1.0);
  });
}

}  // namespace kvq::study
