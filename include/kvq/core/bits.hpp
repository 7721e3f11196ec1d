/// \file
/// kvq/core/bits.hpp — bit-level views of IEEE binary32/binary64 inputs.
///
/// Everything here is constexpr where the compiler allows a constexpr bit cast
/// (GCC >= 11, Clang >= 9, nvcc with such a host compiler: __builtin_bit_cast),
/// and usable on the device (no std::memcpy).
#pragma once

#include <cstdint>
#include <type_traits>

#include <kvq/config.hpp>

namespace kvq {

/// Reinterpret the bytes of `from` as a `To` (same size, trivially copyable).
template <class To, class From>
KVQ_HD constexpr To bit_cast(const From& from) noexcept {
  static_assert(sizeof(To) == sizeof(From), "kvq::bit_cast: sizes differ");
  static_assert(std::is_trivially_copyable<To>::value && std::is_trivially_copyable<From>::value,
                "kvq::bit_cast: types must be trivially copyable");
  return __builtin_bit_cast(To, from);
}

/// Layout of the IEEE-754 binary formats kvq accepts as conversion inputs.
template <class T>
struct ieee_layout;

template <>
/// IEEE-754 binary32.
struct ieee_layout<float> {
  /// Unsigned integer of the same width (the bit pattern).
  using uint = std::uint32_t;
  /// Width of the format in bits.
  static constexpr int total_bits = 32;
  /// Width of the biased exponent field.
  static constexpr int exponent_bits = 8;
  /// Width of the stored fraction (without the implicit bit).
  static constexpr int mantissa_bits = 23;
  /// Exponent bias: value = 2^(field - bias) * 1.fraction for normal numbers.
  static constexpr int bias = 127;
};

template <>
/// IEEE-754 binary64.
struct ieee_layout<double> {
  /// Unsigned integer of the same width (the bit pattern).
  using uint = std::uint64_t;
  /// Width of the format in bits.
  static constexpr int total_bits = 64;
  /// Width of the biased exponent field.
  static constexpr int exponent_bits = 11;
  /// Width of the stored fraction (without the implicit bit).
  static constexpr int mantissa_bits = 52;
  /// Exponent bias: value = 2^(field - bias) * 1.fraction for normal numbers.
  static constexpr int bias = 1023;
};

/// Exact power of two 2^p as a T, for p in the finite range of T (subnormals
/// included). Built from bits, so it is exact and constexpr.
template <class T>
KVQ_HD constexpr T exact_pow2(int p) noexcept {
  using L = ieee_layout<T>;
  using U = typename L::uint;
  const int biased = p + L::bias;
  if (biased >= 1) return bit_cast<T>(static_cast<U>(static_cast<U>(biased) << L::mantissa_bits));
  // subnormal: 2^p = 2^(1-bias-mant) * 2^(p - (1-bias-mant))
  return bit_cast<T>(static_cast<U>(U(1) << (p - (1 - L::bias - L::mantissa_bits))));
}

/// NaN and finiteness tests on the bits (no `<cmath>`, constexpr, the same on every host
/// and device compiler, and immune to -ffinite-math style assumptions). True for every NaN
/// (quiet or signalling, either sign).
KVQ_HD constexpr bool is_nan(float x) noexcept { return (bit_cast<std::uint32_t>(x) & 0x7fffffffu) > 0x7f800000u; }
/// True if x is a NaN (quiet or signalling, either sign); tested on the bits.
KVQ_HD constexpr bool is_nan(double x) noexcept {
  return (bit_cast<std::uint64_t>(x) & 0x7fffffffffffffffULL) > 0x7ff0000000000000ULL;
}
/// True if x is neither Inf nor NaN (zeros and subnormals are finite); tested on the bits.
KVQ_HD constexpr bool is_finite(float x) noexcept { return (bit_cast<std::uint32_t>(x) & 0x7f800000u) != 0x7f800000u; }
/// True if x is neither Inf nor NaN (zeros and subnormals are finite); tested on the bits.
KVQ_HD constexpr bool is_finite(double x) noexcept {
  return (bit_cast<std::uint64_t>(x) & 0x7ff0000000000000ULL) != 0x7ff0000000000000ULL;
}

}  // namespace kvq
