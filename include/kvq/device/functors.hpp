/// \file
/// kvq/device/functors.hpp — element-wise conversion functors for Thrust and CUDA.
///
/// Thin KVQ_HD wrappers around the format core (kvq::encode / kvq::decode), so one
/// definition runs serially on the host, in Thrust's CPP/OMP/TBB backends and on the
/// GPU. The conversion itself is the format core's; nothing here adds arithmetic.
/// Thrust-free: usable from hand-written CUDA kernels too.
#pragma once

#include <cstddef>
#include <cstdint>

#include <kvq/config.hpp>
#include <kvq/format/decode.hpp>
#include <kvq/format/encode.hpp>
#include <kvq/format/policy.hpp>

namespace kvq {
namespace device {

/// x -> code of F with the given rounding/overflow policy.
template <class F, class X = float>
struct encode_fn {
  /// Rounding mode.
  rounding r = rounding::nearest_even;
  /// Overflow policy.
  overflow o = overflow::satfinite;
  /// kvq::encode<F>(x, r, o).
  KVQ_HD std::uint8_t operator()(X x) const { return kvq::encode<F>(x, r, o); }
};

/// (x, random bits) -> code of F, stochastic rounding (kvq::encode_stochastic).
template <class F, class X = float>
struct encode_stochastic_fn {
  /// Overflow policy.
  overflow o = overflow::satfinite;
  /// kvq::encode_stochastic<F>(x, random_bits, o).
  KVQ_HD std::uint8_t operator()(X x, std::uint32_t random_bits) const {
    return kvq::encode_stochastic<F>(x, random_bits, o);
  }
};

/// code of F -> its exact value as T (float or double).
template <class F, class T = float>
struct decode_fn {
  /// kvq::decode<F, T>(code).
  KVQ_HD T operator()(std::uint8_t code) const { return kvq::decode<F, T>(code); }
};

/// x -> decode(encode(x)): the value a consumer of the quantized buffer sees.
template <class F, class X = float>
struct round_trip_fn {
  /// Rounding mode.
  rounding r = rounding::nearest_even;
  /// Overflow policy.
  overflow o = overflow::satfinite;
  /// kvq::decode<F, X>(kvq::encode<F>(x, r, o)).
  KVQ_HD X operator()(X x) const { return kvq::decode<F, X>(kvq::encode<F>(x, r, o)); }
};

/// Byte i of a packed 4-bit code stream: element 2i in the low nibble, 2i+1 in the
/// high nibble (the order of PTX cvt...e2m1x2 with the higher-indexed element as
/// operand a). An odd tail leaves the high nibble of the last byte zero.
template <class F, class InIt, class X = float>
struct encode_pack4_fn {
  /// Input elements (random access).
  InIt in;
  /// Number of input elements.
  std::size_t n;
  /// Rounding mode.
  rounding r = rounding::nearest_even;
  /// Overflow policy.
  overflow o = overflow::satfinite;
  /// Packed byte `byte` of the output (elements 2 byte and 2 byte + 1).
  KVQ_HD std::uint8_t operator()(std::size_t byte) const {
    const std::size_t i = 2 * byte;
    const std::uint8_t lo = static_cast<std::uint8_t>(kvq::encode<F>(static_cast<X>(in[i]), r, o) & 0x0Fu);
    const std::uint8_t hi = i + 1 < n ? static_cast<std::uint8_t>(kvq::encode<F>(static_cast<X>(in[i + 1]), r, o) & 0x0Fu)
                                      : std::uint8_t(0);
    return static_cast<std::uint8_t>(lo | (hi << 4));
  }
};

/// Element i of a packed 4-bit code stream, decoded.
template <class F, class PackedIt, class T = float>
struct decode_unpack4_fn {
  /// Packed bytes (random access).
  PackedIt packed;
  /// Decoded element i.
  KVQ_HD T operator()(std::size_t i) const {
    const std::uint8_t b = static_cast<std::uint8_t>(packed[i / 2]);
    return kvq::decode<F, T>(static_cast<std::uint8_t>((i & 1u) ? (b >> 4) : (b & 0x0Fu)));
  }
};

}  // namespace device
}  // namespace kvq
