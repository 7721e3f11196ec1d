/// \file
/// kvq/core/parallel.hpp — the library's one way of running work on several threads:
/// a fixed partition of an index range (parallel_chunks) and a queue of independent tasks
/// (parallel_tasks), both on caller-chosen thread counts.
///
/// parallel_chunks cuts [0, n) into `threads` contiguous chunks whose boundaries are
/// multiples of `grain` (the last chunk takes the rest); chunk 0 runs on the calling
/// thread. parallel_tasks hands out task indices one at a time to whichever thread is
/// free. Either way the work must be independent per element, chunk or task (each writes
/// only its own output, no shared reduction): then the results cannot depend on the
/// thread count or the schedule, only the wall time does. std::thread only, host only.
#pragma once

#include <atomic>
#include <cstddef>
#include <exception>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <kvq/core/error.hpp>

namespace kvq {
namespace detail {

/// Runs body(k) for k in [1, t) on new threads and body(0) on the calling thread, and
/// returns when all have finished. If a thread cannot be started, or body(0) throws, the
/// threads already started are joined before the exception propagates (never a joinable
/// thread left behind); exceptions of body(k) on other threads must not escape.
template <class Body>
void run_threads(std::size_t t, Body&& body) {
  std::vector<std::thread> pool;
  pool.reserve(t > 1 ? t - 1 : 0);
  try {
    for (std::size_t k = 1; k < t; ++k) pool.emplace_back([&body, k] { body(k); });
    body(std::size_t{0});
  } catch (...) {
    for (auto& th : pool) th.join();
    throw;
  }
  for (auto& th : pool) th.join();
}

/// Calls fn(begin, end) once per non-empty chunk of [0, n) (once with (0, 0) when n is
/// 0), on up to `threads` threads, and returns when all have finished. fn must not
/// throw. `where` names the public entry point in the error message for threads == 0 or
/// grain == 0.
template <class Fn>
void parallel_chunks(const char* where, std::size_t n, unsigned threads, std::size_t grain, Fn&& fn) {
  if (threads == 0) fail(where, "threads is 0 (use 1 for the calling thread only)");
  if (grain == 0) fail(where, "grain is 0");
  const std::size_t units = (n + grain - 1) / grain;
  const std::size_t t = threads < units ? threads : (units == 0 ? 1 : units);
  const std::size_t per = (units + t - 1) / t;  // units per chunk, rounded up
  const std::size_t step = per * grain;
  const std::size_t chunks = n == 0 ? 1 : (n + step - 1) / step;  // the non-empty ones
  run_threads(chunks, [&fn, n, step](std::size_t k) {
    const std::size_t b = k * step;
    fn(b, n - b < step ? n : b + step);
  });
}

/// Calls fn(i) once for every i in [0, n) on up to `threads` threads; each free thread
/// takes the next index, so i may run on any thread in any order. Returns when all have
/// finished; if a task throws, no further task starts and the first exception is
/// rethrown after the running tasks end. `where` names the public entry point in the
/// error message for threads == 0.
template <class Fn>
void parallel_tasks(const char* where, std::size_t n, unsigned threads, Fn&& fn) {
  if (threads == 0) fail(where, "threads is 0 (use 1 for the calling thread only)");
  std::atomic<std::size_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr err;
  std::mutex err_m;
  auto worker = [&](std::size_t) {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= n || failed.load()) return;
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(err_m);
        if (!err) err = std::current_exception();
        failed = true;
        return;
      }
    }
  };
  run_threads(threads < n ? threads : (n == 0 ? 1 : n), worker);
  if (err) std::rethrow_exception(err);
}

}  // namespace detail
}  // namespace kvq
