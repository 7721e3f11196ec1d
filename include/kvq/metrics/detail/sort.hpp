// kvq/metrics/detail/sort.hpp — stable bottom-up merge sort of index arrays (KVQ_HD).
//
// The rank metrics sort permutations of 0..n-1 by keys that live in the caller's
// arrays. A bottom-up merge sort needs no recursion and no allocation (the caller
// passes a scratch array of the same length), is stable, and runs in O(n log n) on
// host and device alike. While merging it can count inversions: pairs (i < j) of the
// input sequence with less(a[j], a[i]) — Knight's (1966) way of counting the
// discordant pairs of Kendall's tau.
#pragma once

#include <cstddef>
#include <cstdint>

#include <kvq/config.hpp>
#include <kvq/core/bits.hpp>

namespace kvq::metrics::detail {

using index_t = std::uint32_t;

// Sorts a[0..n) stably by `less`, using tmp[0..n) as scratch; returns the number of
// inversions of the input order (pairs i < j with less(a[j], a[i])).
template <class Less>
KVQ_HD inline std::uint64_t merge_sort(index_t* a, index_t* tmp, std::size_t n, Less less) {
  std::uint64_t inversions = 0;
  index_t* src = a;
  index_t* dst = tmp;
  for (std::size_t width = 1; width < n; width *= 2) {
    for (std::size_t lo = 0; lo < n; lo += 2 * width) {
      std::size_t mid = lo + width < n ? lo + width : n;
      std::size_t hi = lo + 2 * width < n ? lo + 2 * width : n;
      std::size_t i = lo, j = mid, k = lo;
      while (i < mid && j < hi) {
        if (less(src[j], src[i])) {
          inversions += static_cast<std::uint64_t>(mid - i);
          dst[k++] = src[j++];
        } else {
          dst[k++] = src[i++];
        }
      }
      while (i < mid) dst[k++] = src[i++];
      while (j < hi) dst[k++] = src[j++];
    }
    index_t* t = src;
    src = dst;
    dst = t;
  }
  if (src != a)
    for (std::size_t i = 0; i < n; ++i) a[i] = src[i];
  return inversions;
}

KVQ_HD inline void iota(index_t* a, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) a[i] = static_cast<index_t>(i);
}

using kvq::is_nan;

template <class T>
KVQ_HD inline bool any_nan(const T* x, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (is_nan(x[i])) return true;
  return false;
}

KVQ_HD inline double quiet_nan() { return kvq::bit_cast<double>(std::uint64_t{0x7ff8000000000000ULL}); }

}  // namespace kvq::metrics::detail
