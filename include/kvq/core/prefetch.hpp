/// \file
/// kvq/core/prefetch.hpp — asking for a range of memory into the cache before it is read.
///
/// Why: the hardware prefetcher follows consecutive lines, not the next chunk of a
/// strided pass or rows chosen by an index list; a request issued a step ahead overlaps
/// the wait with the current step's work. A prefetch changes no value.
#pragma once

#include <cstddef>
#include <cstdint>

#include <kvq/config.hpp>

namespace kvq {
namespace detail {

/// Asks for the `bytes` bytes from p + offset into the cache, one request per 64-byte
/// line (host only; nothing on the device). The range may lie past the end of an array:
/// a prefetch never faults, and the addresses are formed as integers, as a pointer past
/// the array would be undefined.
KVQ_HD KVQ_FORCEINLINE void prefetch_bytes(const void* p, std::size_t offset, std::size_t bytes) noexcept {
#if !defined(__CUDA_ARCH__)
  const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(p) + offset;
  for (std::size_t o = 0; o < bytes; o += 64) __builtin_prefetch(reinterpret_cast<const void*>(a + o));
#else
  (void)p, (void)offset, (void)bytes;
#endif
}

}  // namespace detail
}  // namespace kvq
