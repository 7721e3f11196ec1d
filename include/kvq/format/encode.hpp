/// \file
/// kvq/format/encode.hpp — float/double -> minifloat code, one rounding only.
///
/// The contract (DESIGN "Conversion semantics"): for every float and double input,
/// with rounding::nearest_even, kvq::encode returns the code that CUDA's host
/// conversion functions return (cuda_fp8.hpp __nv_cvt_{float,double}_to_fp8,
/// cuda_fp6.hpp __nv_cvt_*_to_fp6, cuda_fp4.hpp __nv_cvt_*_to_fp4,
/// __nv_cvt_*_to_e8m0 with RZ/RP), which is what `cvt.rn.satfinite` produces on
/// the GPU. A double input is rounded directly to the target, never through float.
///
/// Algorithm: |x| = m * 2^k with m an integer significand (24 or 53 bits). The
/// target binade is eT = max(floor(log2|x|), emin); the quantum 2^(eT - M). The
/// significand in quanta, q = m >> shift, is rounded on the shifted-out bits, and
/// the code magnitude is ((eT - emin) << M) + q: a carry out of q moves into the
/// exponent field by itself, and for formats with subnormals the same expression
/// covers the subnormal binade. No count-leading-zeros, no division, no branch on
/// the value except the special inputs: it vectorises (see bulk.hpp).
///
/// Edge policy (each row checked exhaustively against CUDA in tests/format):
/// ~~~
///   input      | e4m3            | e5m2                   | e2m1/e3m2/e2m3 | ue8m0
///   float NaN  | 0x7F            | 0x7F                   | +max (0x7/0x1F)| 0xFF
///   double NaN | 0x7F|sign       | 0x7E|payload bit50|sign| +max           | 0xFF
///   +-Inf      | sat: +-448; nosat: 0x7F|sign | sat: +-57344; nosat: +-Inf | +-max | sat 0xFE, nosat 0xFF
///   overflow   | as Inf (finite inputs: see kvq::overflow for directed modes)
///   +-0, tiny  | +-0 (sign kept)                          | +-0            | 0x00 (no zero: 2^-127)
///   negative   | —                                                         | sign ignored (|x|)
/// ~~~
/// fnuz formats: NaN and nosat overflow -> 0x80, no -0 (a negative result that
/// rounds to zero is +0). ue4m3 (NVFP4 scale) behaves as e4m3 on |x|.
#pragma once

#include <cstdint>
#include <type_traits>

#include <kvq/config.hpp>
#include <kvq/core/bits.hpp>
#include <kvq/format/formats.hpp>
#include <kvq/format/policy.hpp>

namespace kvq {
namespace detail {

/// Code for a NaN input, mirroring CUDA's host functions: the float entry points
/// canonicalise NaN to 0x7FFFFFFF first (sign dropped); the double entry point of
/// cuda_fp8.hpp keeps the sign and, for e5m2, the top payload bit below the quiet bit.
template <class F, class X>
KVQ_HD constexpr std::uint8_t nan_input_code(typename ieee_layout<X>::uint bits) noexcept {
  if constexpr (F::special == specials::none) {
    return F::max_finite_code;  // no NaN: positive maximum (cuda_fp4.hpp/cuda_fp6.hpp)
  } else if constexpr (F::special == specials::fnuz || !F::is_signed) {
    return F::nan_code;
  } else if constexpr (std::is_same<X, double>::value) {
    using L = ieee_layout<X>;
    const std::uint8_t sign = static_cast<std::uint8_t>((bits >> (L::total_bits - 1)) ? F::sign_mask : 0u);
    if constexpr (F::special == specials::ieee) {
      // cuda_fp8.hpp: res = 0x7E | mantissa, mantissa = top M bits of the input's mantissa.
      const std::uint8_t top = static_cast<std::uint8_t>((bits >> (L::mantissa_bits - F::mantissa_bits)) &
                                                         ((1u << F::mantissa_bits) - 1u));
      return static_cast<std::uint8_t>((F::inf_code | (1u << (F::mantissa_bits - 1)) | top) | sign);
    } else {
      return static_cast<std::uint8_t>(F::nan_code | sign);
    }
  } else {
    return F::nan_code;
  }
}

/// Magnitude code for a result beyond the largest finite one.
template <class F>
KVQ_HD constexpr std::uint8_t overflow_code(bool toward_finite, bool is_inf_input, overflow o) noexcept {
  if (o == overflow::satfinite || F::special == specials::none) return F::max_finite_code;
  if (toward_finite && !is_inf_input) return F::max_finite_code;
  if constexpr (F::has_inf) return F::inf_code;
  return F::special == specials::fnuz ? std::uint8_t(0) : F::nan_code;  // fnuz NaN is the sign code
}

/// Shared core: R = rounding mode, or stochastic when Stochastic is true.
template <class F, bool Stochastic, class X>
KVQ_HD constexpr std::uint8_t encode_impl(X x, rounding r, overflow o, std::uint32_t random_bits) noexcept {
  using L = ieee_layout<X>;
  using U = typename L::uint;
  static_assert(F::emin >= -L::bias, "kvq: format range below the input type's normal range");
  static_assert(F::mantissa_bits + 2 <= L::mantissa_bits, "kvq: format mantissa too wide for input");

  const U bits = bit_cast<U>(x);
  bool neg = (bits >> (L::total_bits - 1)) != 0;
  const U exp_field = static_cast<U>((bits >> L::mantissa_bits) & ((U(1) << L::exponent_bits) - 1));
  const U frac = bits & ((U(1) << L::mantissa_bits) - 1);

  if (exp_field == (U(1) << L::exponent_bits) - 1) {  // Inf or NaN
    if (frac != 0) return nan_input_code<F, X>(bits);
    const std::uint8_t mag = overflow_code<F>(false, true, o);
    if constexpr (F::special == specials::fnuz) {
      if (mag == 0) return F::nan_code;
    }
    return static_cast<std::uint8_t>(mag | (neg && F::is_signed ? F::sign_mask : 0u));
  }
  if constexpr (!F::is_signed) neg = false;  // unsigned formats take |x| (as CUDA's e8m0)

  // |x| = m * 2^k; lg = floor(log2|x|) for normal inputs. For subnormal inputs lg is
  // taken as -bias (the binade just below the normal range): every format's emin is
  // at or above it, so eT = max(lg, emin) is still exact.
  const bool normal_in = exp_field != 0;
  const U m = normal_in ? (frac | (U(1) << L::mantissa_bits)) : frac;
  const int k = (normal_in ? static_cast<int>(exp_field) : 1) - L::bias - L::mantissa_bits;
  const int lg = normal_in ? static_cast<int>(exp_field) - L::bias : -L::bias;
  const int e_t = lg < F::emin ? F::emin : lg;
  const int full_shift = (e_t - F::mantissa_bits) - k;  // >= 1 always (static_assert above)
  // m < 2^(total-1): a shift of total-1 already discards every bit (q = 0, rem = m);
  // clamping keeps the shifts defined. full_shift still scales the stochastic fraction.
  const int shift = full_shift > L::total_bits - 1 ? L::total_bits - 1 : full_shift;

  const U q = m >> shift;
  const U rem = m & ((U(1) << shift) - 1);
  const U half = U(1) << (shift - 1);
  bool up = false;
  if constexpr (Stochastic) {
    // Round up iff frac32 + random_bits >= 2^32, frac32 = the discarded fraction of
    // a quantum as 32-bit fixed point (truncated): P(up) = fraction, to 2^-32.
    // rem is the discarded part in units of 2^-full_shift quanta (rem == m when the
    // shift was clamped), so frac32 = floor(rem * 2^(32 - full_shift)).
    std::uint64_t frac32 = 0;
    if (full_shift >= 32) {
      if (full_shift - 32 < L::total_bits) frac32 = static_cast<std::uint64_t>(rem >> (full_shift - 32));
    } else {
      frac32 = static_cast<std::uint64_t>(rem) << (32 - full_shift);
    }
    up = ((frac32 + random_bits) >> 32) != 0;
  } else {
    switch (r) {
      case rounding::nearest_even: up = rem > half || (rem == half && (q & 1u)); break;
      case rounding::nearest_away: up = rem >= half; break;
      case rounding::toward_zero: up = false; break;
      case rounding::up: up = rem != 0 && !neg; break;
      case rounding::down: up = rem != 0 && neg; break;
    }
  }
  const int sig = static_cast<int>(q) + (up ? 1 : 0);

  int mag = ((e_t - F::emin) << F::mantissa_bits) + sig;
  if constexpr (!F::has_subnormals) {
    // Biased exponent 0 is a normal binade: drop the implicit bit. Below it there is
    // no zero: underflow clamps to the smallest code (CUDA: 0 and tiny -> 0x00).
    mag -= 1 << F::mantissa_bits;
    if (mag < 0) mag = 0;
  }
  std::uint8_t code = 0;
  if (mag > F::max_finite_code) {
    const bool toward_finite = !Stochastic && (r == rounding::toward_zero || (r == rounding::up && neg) ||
                                               (r == rounding::down && !neg));
    code = overflow_code<F>(toward_finite, false, o);
    if constexpr (F::special == specials::fnuz) {
      if (code == 0) return F::nan_code;
    }
  } else {
    code = static_cast<std::uint8_t>(mag);
  }
  if constexpr (F::special == specials::fnuz) {
    if (code == 0) return 0;  // no negative zero
  }
  return static_cast<std::uint8_t>(code | (neg ? F::sign_mask : 0u));
}

template <class X>
inline constexpr bool is_encode_input_v = std::is_same<X, float>::value || std::is_same<X, double>::value;

}  // namespace detail

/// Encode x (float or double) to the code of format F (a kvq::fmt:: traits type or
/// a kvq:: value type). Never throws; every input has a defined result (see the
/// edge-policy table above).
template <class F, class X>
KVQ_HD constexpr std::uint8_t encode(X x, rounding r = rounding::nearest_even,
                                     overflow o = overflow::satfinite) noexcept {
  static_assert(detail::is_encode_input_v<X>, "kvq::encode takes float or double");
  return detail::encode_impl<format_of_t<F>, false>(x, r, o, 0u);
}

/// Stochastic rounding with caller-supplied random bits: the result is one of the
/// two neighbouring codes, rounded away from zero iff frac32 + random_bits >= 2^32,
/// where frac32 is the discarded part of a quantum as 32-bit fixed point
/// (truncated). random_bits == 0 gives toward_zero. Uniform random_bits give
/// P(away) = fraction. Overflow follows `o` as for nearest rounding.
template <class F, class X>
KVQ_HD constexpr std::uint8_t encode_stochastic(X x, std::uint32_t random_bits,
                                                overflow o = overflow::satfinite) noexcept {
  static_assert(detail::is_encode_input_v<X>, "kvq::encode_stochastic takes float or double");
  return detail::encode_impl<format_of_t<F>, true>(x, rounding::nearest_even, o, random_bits);
}

}  // namespace kvq
