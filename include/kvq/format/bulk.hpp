/// \file
/// kvq/format/bulk.hpp — encode/decode whole arrays.
///
/// The loops instantiate the scalar kvq::encode with compile-time policies so the
/// compiler can vectorise them; they are bit-identical to the scalar function
/// (that *is* the function). Decoding goes through a 256-entry table.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <kvq/config.hpp>
#include <kvq/format/decode.hpp>
#include <kvq/format/encode.hpp>

namespace kvq {
namespace detail {

template <class F, rounding R, overflow O, class X>
KVQ_HD constexpr std::uint8_t encode_fixed(X x) noexcept {
  return encode_impl<F, false>(x, R, O, 0u);
}

/// Fast float -> F with nearest_even, bit-identical to encode_impl (checked on all
/// 2^32 inputs by tests/format). Normal binades: the classic integer round-half-even
/// on the float's bits (a carry moves into the exponent by itself). Subnormal binade
/// of F: adding C = 2^(emin - M + 23) makes the FPU round |x| to a multiple of
/// 2^(emin - M), nearest-even, because C's ulp is exactly that quantum; the code is
/// then the bit difference. This relies on the default floating-point environment
/// (round-to-nearest, no FTZ/DAZ), which kvq requires everywhere. Straight-line code
/// with selects only, so the loop vectorises to near memory speed.
/// Branch-free select. Written with masks rather than ?: on purpose: GCC turns a
/// ?: whose arms differ in cost into a branch, sinks the float add below into one
/// arm, and then (under the default -ftrapping-math) may not speculate it again,
/// which blocks vectorisation.
KVQ_HD KVQ_FORCEINLINE std::uint32_t select_bits(bool c, std::uint32_t a, std::uint32_t b) noexcept {
  const std::uint32_t m = 0u - static_cast<std::uint32_t>(c);
  return (a & m) | (b & ~m);
}

template <class F, overflow O>
KVQ_HD inline std::uint8_t encode_rne_float_fast(float x) noexcept {
  static_assert(F::has_subnormals, "fast path needs a format with subnormals");
  constexpr int M = F::mantissa_bits;
  constexpr int drop = 23 - M;
  const std::uint32_t bits = bit_cast<std::uint32_t>(x);
  const std::uint32_t u = bits & 0x7FFFFFFFu;
  // normal binades of F (Inf lands far above the maximum and is clamped below)
  const std::uint32_t rounded = u + ((1u << (drop - 1)) - 1u) + ((u >> drop) & 1u);
  const std::uint32_t n_code = (rounded >> drop) - (static_cast<std::uint32_t>(127 - F::bias) << M);
  // subnormal binade of F
  constexpr std::uint32_t c_bits = static_cast<std::uint32_t>(F::emin - M + 23 + 127) << 23;
  const float c = bit_cast<float>(c_bits);
  const std::uint32_t s_code = bit_cast<std::uint32_t>(bit_cast<float>(u) + c) - c_bits;
  constexpr std::uint32_t min_normal_bits = static_cast<std::uint32_t>(F::emin + 127) << 23;
  std::uint32_t mag = select_bits(u < min_normal_bits, s_code, n_code);
  // n_code of a value below 2^emin would wrap; it is never selected then.
  constexpr std::uint32_t max_code = F::max_finite_code;
  const bool over = mag > max_code;
  if constexpr (O == overflow::satfinite || F::special == specials::none) {
    mag = select_bits(over, max_code, mag);
  } else {
    constexpr std::uint32_t ovf = F::has_inf ? F::inf_code : (F::special == specials::fnuz ? 0x100u : F::nan_code);
    mag = select_bits(over, ovf, mag);
  }
  std::uint32_t code = mag | select_bits((bits >> 31) != 0, F::sign_mask, 0u);
  if constexpr (F::special == specials::fnuz) {
    code = select_bits(mag == 0, 0u, code);             // no -0
    code = select_bits(mag == 0x100u, F::nan_code, code);  // overflow -> NaN (0x80)
  }
  constexpr std::uint32_t nan_out = F::special == specials::none ? F::max_finite_code : F::nan_code;
  code = select_bits(u > 0x7F800000u, nan_out, code);
  return static_cast<std::uint8_t>(code);
}

template <class F, rounding R, overflow O, class X>
inline void encode_loop(const X* in, std::size_t n, std::uint8_t* out) noexcept {
  if constexpr (std::is_same<X, float>::value && R == rounding::nearest_even && F::has_subnormals) {
    for (std::size_t i = 0; i < n; ++i) out[i] = encode_rne_float_fast<F, O>(in[i]);
  } else {
    for (std::size_t i = 0; i < n; ++i) out[i] = encode_fixed<F, R, O>(in[i]);
  }
}

template <class F, rounding R, class X>
inline void encode_loop_o(const X* in, std::size_t n, std::uint8_t* out, overflow o) noexcept {
  if (o == overflow::satfinite) encode_loop<F, R, overflow::satfinite>(in, n, out);
  else encode_loop<F, R, overflow::nosat>(in, n, out);
}

template <class F, class T>
struct decode_table {
  std::array<T, 256> v{};
  constexpr decode_table() noexcept {
    for (int c = 0; c < 256; ++c) v[static_cast<std::size_t>(c)] = decode<F, T>(static_cast<std::uint8_t>(c));
  }
};
template <class F, class T>
inline constexpr decode_table<F, T> decode_table_v{};

}  // namespace detail

/// out[i] = encode<F>(in[i], r, o) for i < n. X is float or double.
template <class F, class X>
inline void encode_n(const X* in, std::size_t n, std::uint8_t* out, rounding r = rounding::nearest_even,
                     overflow o = overflow::satfinite) noexcept {
  using Fm = format_of_t<F>;
  switch (r) {
    case rounding::nearest_even: detail::encode_loop_o<Fm, rounding::nearest_even>(in, n, out, o); break;
    case rounding::toward_zero: detail::encode_loop_o<Fm, rounding::toward_zero>(in, n, out, o); break;
    case rounding::up: detail::encode_loop_o<Fm, rounding::up>(in, n, out, o); break;
    case rounding::down: detail::encode_loop_o<Fm, rounding::down>(in, n, out, o); break;
    case rounding::nearest_away: detail::encode_loop_o<Fm, rounding::nearest_away>(in, n, out, o); break;
  }
}

/// out[i] = decode<F, T>(in[i]) for i < n, through a 256-entry table.
template <class F, class T = float>
inline void decode_n(const std::uint8_t* in, std::size_t n, T* out) noexcept {
  const auto& table = detail::decode_table_v<format_of_t<F>, T>.v;
  for (std::size_t i = 0; i < n; ++i) out[i] = table[in[i]];
}

}  // namespace kvq
