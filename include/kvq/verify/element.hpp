/// \file
/// kvq/verify/element.hpp — per-element pieces of the verifier that device code can
/// reuse (KVQ_HD, no allocation): the raw bits of an element, the bit-for-bit equality
/// test, code unpacking, and decoders that turn an element into a printable double.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <kvq/config.hpp>
#include <kvq/core/float16.hpp>
#include <kvq/format/decode.hpp>
#include <kvq/format/formats.hpp>
#include <kvq/format/traits.hpp>

/// Bit-for-bit verification of conversions: per-element bit comparison, content hashes,
/// mismatch reports, TestFloat-style input generators and pipelines, the explanation of
/// block-scaled mismatches, and the check of numpy dumps written by a kernel.
namespace kvq::verify {

/// The object representation of v (up to 8 bytes) zero-extended to 64 bits: floats
/// compare by bit pattern, so -0 != +0 and NaN payloads are distinguished.
template <class T>
KVQ_HD constexpr std::uint64_t raw_bits(const T& v) noexcept {
  static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= 8, "kvq::verify: elements up to 8 bytes");
  if constexpr (sizeof(T) == 1) return kvq::bit_cast<std::uint8_t>(v);
  else if constexpr (sizeof(T) == 2) return kvq::bit_cast<std::uint16_t>(v);
  else if constexpr (sizeof(T) == 4) return kvq::bit_cast<std::uint32_t>(v);
  else return kvq::bit_cast<std::uint64_t>(v);
}

/// a and b have the same bits.
struct same_bits {
  template <class T>
  /// True if a and b have the same object representation (raw_bits()).
  KVQ_HD constexpr bool operator()(const T& a, const T& b) const noexcept {
    return raw_bits(a) == raw_bits(b);
  }
};

/// i-th element differs between two buffers (for counting on the device with an exact
/// integer reduction).
template <class T>
struct differs_at {
  /// Reference buffer.
  const T* expected;
  /// Subject's buffer.
  const T* actual;
  /// True if element i of the two buffers differs in its bits.
  KVQ_HD bool operator()(std::size_t i) const noexcept { return !same_bits{}(expected[i], actual[i]); }
};

/// Code i of a packed buffer with `bits` bits per code (8: one per byte; 4: two per
/// byte, element 2j in the low nibble of byte j — the cvt...e2m1x2 packing; 2: four per
/// byte from bit 0). Right-aligned in the result.
KVQ_HD constexpr std::uint8_t unpack_code(const std::uint8_t* buf, std::size_t i, int bits) noexcept {
  if (bits == 8) return buf[i];
  const std::size_t per = static_cast<std::size_t>(8 / bits);
  const unsigned shift = static_cast<unsigned>((i % per) * static_cast<std::size_t>(bits));
  return static_cast<std::uint8_t>((buf[i / per] >> shift) & ((1u << bits) - 1u));
}

// ---- decoders: element -> double, for the report ----------------------------------

/// No value, only bits (prints as "-").
struct no_decoder {
  /// The report prints bits only.
  static constexpr bool has_value = false;
  template <class T>
  /// Always 0 (no value).
  KVQ_HD constexpr double operator()(const T&) const noexcept {
    return 0.0;
  }
};

/// A code of format F (kvq::decode, exact).
template <class F>
struct code_decoder {
  /// The report prints decoded values.
  static constexpr bool has_value = true;
  /// The exact value of code c of F (kvq::decode).
  KVQ_HD constexpr double operator()(std::uint8_t c) const noexcept { return kvq::decode<F, double>(c); }
};

/// float / double as themselves.
struct float_decoder {
  /// The report prints decoded values.
  static constexpr bool has_value = true;
  template <class T>
  /// v converted to double (exact for float).
  KVQ_HD constexpr double operator()(const T& v) const noexcept {
    return static_cast<double>(v);
  }
};

/// bfloat16 elements given as their 16-bit patterns.
struct bf16_decoder {
  /// The report prints decoded values.
  static constexpr bool has_value = true;
  /// The exact value of bfloat16 pattern b.
  KVQ_HD constexpr double operator()(std::uint16_t b) const noexcept { return kvq::bf16_to_float(b); }
};

/// IEEE binary16 elements given as their 16-bit patterns.
struct fp16_decoder {
  /// The report prints decoded values.
  static constexpr bool has_value = true;
  /// The exact value of binary16 pattern b.
  KVQ_HD constexpr double operator()(std::uint16_t b) const noexcept { return kvq::fp16_to_float(b); }
};

}  // namespace kvq::verify
