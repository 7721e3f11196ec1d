/// \file
/// kvq/device/content_hash.hpp — the content hash (kvq/device/hash.hpp) of a buffer on
/// any Thrust device system.
///
/// This is the one place the device layer uses a Thrust reduction, and it is exact:
/// the reduced values are 64-bit unsigned integers added modulo 2^64, so the result
/// does not depend on the backend's reduction order or thread count. Floating-point
/// values are never reduced this way (DESIGN "Determinism").
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>

#include <kvq/device/hash.hpp>
#include <kvq/device/system.hpp>

#include <thrust/functional.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/zip_iterator.h>
#include <thrust/transform_reduce.h>
#include <thrust/tuple.h>

namespace kvq {
namespace device {

/// (index, value) -> hash_term(index, bits(value)).
template <class T>
struct hash_term_fn {
  template <class Tuple>
  /// Hash term of one (index, value) tuple.
  KVQ_HD std::uint64_t operator()(const Tuple& t) const {
    return hash_term(static_cast<std::uint64_t>(thrust::get<0>(t)), element_bits(static_cast<T>(thrust::get<1>(t))));
  }
};

/// Content hash of [first, last), computed on the iterators' system. Equal to
/// content_hash_serial(first, last - first) on the host.
template <class It>
std::uint64_t content_hash(It first, It last) {
  using T = typename std::iterator_traits<It>::value_type;
  const auto n = static_cast<std::uint64_t>(last - first);
  auto zip = thrust::make_zip_iterator(thrust::make_tuple(thrust::counting_iterator<std::uint64_t>(0), first));
  const std::uint64_t sum = thrust::transform_reduce(zip, zip + static_cast<std::ptrdiff_t>(n), hash_term_fn<T>{},
                                                     std::uint64_t(0), thrust::plus<std::uint64_t>());
  return hash_finish(sum, n);
}

/// Content hash of a whole container (thrust::host_vector, thrust::device_vector, std::vector).
template <class Container>
std::uint64_t content_hash(const Container& c) {
  return content_hash(c.begin(), c.end());
}

}  // namespace device
}  // namespace kvq
