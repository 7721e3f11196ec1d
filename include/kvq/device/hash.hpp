/// \file
/// kvq/device/hash.hpp — an order-independent content hash of a buffer.
///
/// Bit-identity between backends is checked by hashing each output buffer. The hash
/// is a sum (mod 2^64) of one mixed term per element, term = mix(index, bits), so it
/// can be computed by any reduction in any order and by any number of threads with
/// the same result: unsigned wrap-around addition is associative and commutative,
/// unlike floating-point addition. It covers the bit pattern of each element (so -0
/// and +0, and NaN payloads, differ) and its position (so a permutation differs).
///
/// This header is Thrust-free; kvq/device/content_hash.hpp adds the parallel version.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <kvq/config.hpp>
#include <kvq/core/bits.hpp>

namespace kvq {
namespace device {

/// The splitmix64 finaliser (Steele, Lea, Flood, "Fast splittable pseudorandom
/// number generators", OOPSLA 2014): a bijection of 64-bit words with full avalanche.
KVQ_HD constexpr std::uint64_t mix64(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// The raw bits of an element, zero-extended to 64 bits.
template <class T>
KVQ_HD constexpr std::uint64_t element_bits(const T& v) noexcept {
  static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= 8, "kvq: hash of elements up to 8 bytes");
  if constexpr (std::is_same<T, float>::value) {
    return kvq::bit_cast<std::uint32_t>(v);
  } else if constexpr (std::is_same<T, double>::value) {
    return kvq::bit_cast<std::uint64_t>(v);
  } else if constexpr (std::is_integral<T>::value) {
    return static_cast<std::uint64_t>(static_cast<std::make_unsigned_t<T>>(v));
  } else if constexpr (sizeof(T) == 1) {
    return kvq::bit_cast<std::uint8_t>(v);
  } else if constexpr (sizeof(T) == 2) {
    return kvq::bit_cast<std::uint16_t>(v);
  } else if constexpr (sizeof(T) == 4) {
    return kvq::bit_cast<std::uint32_t>(v);
  } else {
    return kvq::bit_cast<std::uint64_t>(v);
  }
}

/// One element's contribution to the content hash.
KVQ_HD constexpr std::uint64_t hash_term(std::uint64_t index, std::uint64_t bits) noexcept {
  return mix64(mix64(index + 0x9E3779B97F4A7C15ull) ^ bits);
}

/// Final step: binds the length in, so buffers that differ only by trailing
/// elements whose terms sum to zero still differ.
KVQ_HD constexpr std::uint64_t hash_finish(std::uint64_t sum, std::uint64_t n) noexcept {
  return mix64(sum ^ mix64(n ^ 0xD6E8FEB86659FD93ull));
}

/// Serial content hash of n elements starting at `first` (host or device code).
template <class It>
KVQ_HD std::uint64_t content_hash_serial(It first, std::size_t n) noexcept {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < n; ++i) {
    sum += hash_term(i, element_bits(first[i]));
  }
  return hash_finish(sum, n);
}

}  // namespace device
}  // namespace kvq
