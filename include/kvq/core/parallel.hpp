/// \file
/// kvq/core/parallel.hpp — a fixed partition of an index range over caller-chosen
/// threads, for the element-wise and block-wise bulk entry points.
///
/// The range [0, n) is cut into `threads` contiguous chunks whose boundaries are
/// multiples of `grain` (the last chunk takes the rest); chunk 0 runs on the calling
/// thread. The work must be independent per element (or per grain): then the results
/// cannot depend on the thread count, only the wall time does. std::thread only, host
/// only.
#pragma once

#include <cstddef>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <kvq/core/error.hpp>

namespace kvq {
namespace detail {

/// Calls fn(begin, end) once per non-empty chunk of [0, n), on up to `threads` threads,
/// and returns when all have finished. fn must not throw. `where` names the public entry
/// point in the error message for threads == 0 or grain == 0.
template <class Fn>
void parallel_chunks(const char* where, std::size_t n, unsigned threads, std::size_t grain, Fn&& fn) {
  if (threads == 0) fail(where, "threads is 0 (use 1 for the calling thread only)");
  if (grain == 0) fail(where, "grain is 0");
  const std::size_t units = (n + grain - 1) / grain;
  const std::size_t t = threads < units ? threads : (units == 0 ? 1 : units);
  const std::size_t per = (units + t - 1) / t;  // units per chunk, rounded up
  const std::size_t step = per * grain;
  std::vector<std::thread> pool;
  pool.reserve(t - 1);
  try {
    for (std::size_t k = 1; k < t; ++k) {
      const std::size_t b = k * step;
      if (b >= n) break;
      const std::size_t e = n - b < step ? n : b + step;
      pool.emplace_back([&fn, b, e] { fn(b, e); });
    }
  } catch (const std::system_error&) {
    for (auto& th : pool) th.join();  // never leave a joinable thread behind
    throw;
  }
  fn(std::size_t{0}, n < step ? n : step);
  for (auto& th : pool) th.join();
}

}  // namespace detail
}  // namespace kvq
