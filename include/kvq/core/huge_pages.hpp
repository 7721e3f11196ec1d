/// \file
/// kvq/core/huge_pages.hpp — large host buffers backed by transparent huge pages where the
/// system allows it.
///
/// Why: a study's context is tens of MiB written once (the keys, their dequantized copy,
/// the logit screens), and every 4 KiB page of it costs a page fault on first touch: on a
/// 32k-token context about 14 000 faults, a tenth of the run. Linux backs a range with
/// 2 MiB pages when the range is marked MADV_HUGEPAGE before it is touched (the default
/// "madvise" mode of /sys/kernel/mm/transparent_hugepage/enabled; "always" needs no
/// mark, "never" ignores it). The mark is advice: it changes no value, and where it is
/// refused or unknown (other systems, the kernel's setting) nothing happens.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace kvq {
namespace detail {

/// Size of a transparent huge page on x86-64 and most aarch64 kernels.
constexpr std::size_t huge_page_bytes = std::size_t{2} << 20;

/// Marks the whole 2 MiB pages inside [p, p + bytes) MADV_HUGEPAGE (Linux; nothing
/// elsewhere, nothing for ranges holding no whole huge page). Call before the first
/// write: pages already touched stay as they are.
inline void advise_huge_pages(void* p, std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const std::uintptr_t a = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t first = (a + huge_page_bytes - 1) & ~(huge_page_bytes - 1);
  const std::uintptr_t last = (a + bytes) & ~(huge_page_bytes - 1);
  if (p == nullptr || bytes < huge_page_bytes || last <= first) return;
  (void)madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);  // advice: failure is harmless
#else
  (void)p;
  (void)bytes;
#endif
}

/// A vector of n value-initialised elements whose storage was marked for huge pages
/// before it was filled (the same contents as std::vector<T>(n)).
template <class T>
std::vector<T> huge_vector(std::size_t n) {
  std::vector<T> v;
  v.reserve(n);
  advise_huge_pages(v.data(), n * sizeof(T));
  v.resize(n);
  return v;
}

/// v.resize(n) for a vector that is empty so far (its storage marked as huge_vector's);
/// any other vector is resized as it is.
template <class T>
void resize_huge(std::vector<T>& v, std::size_t n) {
  if (v.empty() && v.capacity() < n) {
    std::vector<T>().swap(v);
    v.reserve(n);
    advise_huge_pages(v.data(), n * sizeof(T));
  }
  v.resize(n);
}

}  // namespace detail
}  // namespace kvq
