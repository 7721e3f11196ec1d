/// \file
/// kvq/format/parallel.hpp — encode_n / decode_n on several threads.
///
/// The array is cut into `threads` contiguous chunks (boundaries at multiples of 64
/// elements, kvq::detail::parallel_chunks) and each chunk runs the single-thread bulk
/// loop. Conversion is element-wise, so the codes are the same for every thread count;
/// only the time changes. Host only (std::thread).
#pragma once

#include <cstddef>
#include <cstdint>

#include <kvq/core/error.hpp>
#include <kvq/core/parallel.hpp>
#include <kvq/format/bulk.hpp>

namespace kvq {

/// out[i] = encode<F>(in[i], r, o) for i < n, on `threads` threads (the calling thread
/// and threads - 1 more). Throws std::invalid_argument if threads is 0 or a pointer is
/// null while n > 0; std::system_error if a thread cannot be started.
template <class F, class X>
void encode_n_parallel(const X* in, std::size_t n, std::uint8_t* out, unsigned threads,
                       rounding r = rounding::nearest_even, overflow o = overflow::satfinite) {
  constexpr const char* where = "kvq::encode_n_parallel";
  if (n > 0 && in == nullptr) detail::fail(where, "in is null");
  if (n > 0 && out == nullptr) detail::fail(where, "out is null");
  detail::parallel_chunks(where, n, threads, 64, [=](std::size_t b, std::size_t e) noexcept {
    encode_n<F>(in + b, e - b, out + b, r, o);
  });
}

/// out[i] = decode<F, T>(in[i]) for i < n, on `threads` threads. Throws as
/// encode_n_parallel.
template <class F, class T = float>
void decode_n_parallel(const std::uint8_t* in, std::size_t n, T* out, unsigned threads) {
  constexpr const char* where = "kvq::decode_n_parallel";
  if (n > 0 && in == nullptr) detail::fail(where, "in is null");
  if (n > 0 && out == nullptr) detail::fail(where, "out is null");
  detail::parallel_chunks(where, n, threads, 64, [=](std::size_t b, std::size_t e) noexcept {
    decode_n<F, T>(in + b, e - b, out + b);
  });
}

}  // namespace kvq
