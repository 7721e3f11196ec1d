/// \file
/// kvq/format/traits.hpp — the generic minifloat format description.
///
/// A format is a traits type: sign bit or not, exponent and mantissa widths, bias,
/// the special-value encoding, and whether the all-zero exponent field holds
/// subnormals. Like CUTLASS's exmy_base.h (format properties separate from value
/// types and converters) and libcu++'s __floating_point/ traits, nothing here
/// converts anything; encode.hpp and decode.hpp are free functions templated on it.
#pragma once

#include <cstdint>
#include <type_traits>

#include <kvq/config.hpp>

namespace kvq {

/// Which codes are special.
enum class specials : unsigned char {
  ieee,        ///< exponent all ones: Inf (mantissa 0) or NaN (mantissa != 0) — e5m2
  finite_nan,  ///< no Inf; only the all-ones magnitude is NaN — e4m3 (OCP "fn"), ue4m3, ue8m0
  fnuz,        ///< no Inf, no -0; the sign-only code (0x80) is the one NaN — e4m3fnuz, e5m2fnuz
  none         ///< every code is a finite number — e3m2, e2m3, e2m1
};

namespace detail {
KVQ_HD constexpr double pow2_double(int p) noexcept {
  double r = 1.0;
  if (p >= 0) {
    for (int i = 0; i < p; ++i) r *= 2.0;
  } else {
    for (int i = 0; i < -p; ++i) r *= 0.5;
  }
  return r;
}
}  // namespace detail

/// The generic format. Codes are right-aligned in a std::uint8_t: an e2m1 code
/// uses bits 0..3 (sign in bit 3), an FP6 code bits 0..5.
template <bool Signed, int ExpBits, int ManBits, int Bias, specials Specials, bool Subnormals = true>
struct minifloat_format {
  static_assert(ExpBits >= 1 && ManBits >= 0, "kvq: format needs at least one exponent bit");
  static_assert((Signed ? 1 : 0) + ExpBits + ManBits <= 8, "kvq: formats are at most 8 bits wide");
  static_assert(ManBits <= 7, "kvq: mantissa too wide");
  static_assert(Subnormals || Specials == specials::finite_nan || Specials == specials::none,
                "kvq: formats without subnormals are modelled as unsigned scale formats (ue8m0)");
  static_assert(!(Specials == specials::fnuz && !Signed), "kvq: fnuz needs a sign bit");

  /// True if the format has a sign bit.
  static constexpr bool is_signed = Signed;
  /// Width of the exponent field.
  static constexpr int exponent_bits = ExpBits;
  /// Width of the mantissa (fraction) field.
  static constexpr int mantissa_bits = ManBits;
  /// Exponent bias: a normal code with exponent field E has value 2^(E - bias) * 1.m.
  static constexpr int bias = Bias;
  /// Which codes are special (see kvq::specials).
  static constexpr specials special = Specials;
  /// True if the all-zero exponent field holds zero and subnormals (false: ue8m0).
  static constexpr bool has_subnormals = Subnormals;
  /// Total width of a code in bits (at most 8).
  static constexpr int bits = (Signed ? 1 : 0) + ExpBits + ManBits;

  /// True if the format has infinities (only specials::ieee).
  static constexpr bool has_inf = Specials == specials::ieee;
  /// True if the format has a NaN code.
  static constexpr bool has_nan = Specials != specials::none;
  /// Without subnormals the all-zero code is the smallest normal (ue8m0: 2^-127).
  static constexpr bool has_zero = Subnormals;
  /// True if -0 is a separate code (signed, with zero, not fnuz).
  static constexpr bool has_negative_zero = Signed && Subnormals && Specials != specials::fnuz;

  /// Mask of the magnitude bits (exponent and mantissa fields).
  static constexpr std::uint8_t magnitude_mask = static_cast<std::uint8_t>((1u << (ExpBits + ManBits)) - 1u);
  /// Mask of the sign bit (0 for unsigned formats).
  static constexpr std::uint8_t sign_mask = Signed ? static_cast<std::uint8_t>(1u << (ExpBits + ManBits)) : 0u;
  /// Mask of all the format's bits (bits 0 .. bits-1).
  static constexpr std::uint8_t code_mask = static_cast<std::uint8_t>((1u << bits) - 1u);

  /// Largest finite magnitude code.
  static constexpr std::uint8_t max_finite_code = static_cast<std::uint8_t>(
      Specials == specials::ieee         ? ((((1u << ExpBits) - 1u) << ManBits) - 1u)
      : Specials == specials::finite_nan ? (magnitude_mask - 1u)
                                         : magnitude_mask);

  /// The canonical NaN code (all-ones magnitude, positive; 0x80 for fnuz), what a
  /// float NaN encodes to; meaningless where has_nan is false.
  static constexpr std::uint8_t nan_code =
      static_cast<std::uint8_t>(Specials == specials::fnuz ? sign_mask : magnitude_mask);
  /// +Inf code; meaningless where has_inf is false.
  static constexpr std::uint8_t inf_code = static_cast<std::uint8_t>(((1u << ExpBits) - 1u) << ManBits);

  /// Unbiased exponent of the smallest normal binade (1 - bias; -bias without subnormals).
  static constexpr int emin = (Subnormals ? 1 : 0) - Bias;
  /// Unbiased exponent of the largest finite binade.
  static constexpr int emax = static_cast<int>(max_finite_code >> ManBits) - Bias;

  /// Largest finite value.
  KVQ_HD static constexpr double max_finite() noexcept {
    return static_cast<double>((1u << ManBits) + (max_finite_code & ((1u << ManBits) - 1u))) *
           detail::pow2_double(emax - ManBits);
  }
  /// Smallest positive normal value, 2^emin.
  KVQ_HD static constexpr double min_normal() noexcept { return detail::pow2_double(emin); }
  /// Smallest positive value: 2^(emin - mantissa_bits), or 2^emin without subnormals.
  KVQ_HD static constexpr double min_subnormal() noexcept {
    return Subnormals ? detail::pow2_double(emin - ManBits) : detail::pow2_double(emin);
  }
};

namespace detail {
template <class T, class = void>
struct format_of {
  using type = T;
};
template <class T>
struct format_of<T, decltype(void(sizeof(typename T::format_type)))> {
  using type = typename T::format_type;
};
}  // namespace detail

/// The traits type of F, whether F is a traits type (kvq::fmt::e4m3) or a value
/// type (kvq::e4m3).
template <class F>
using format_of_t = typename detail::format_of<F>::type;

/// Largest finite value of format F (traits or value type).
template <class F> inline constexpr double max_finite_v = format_of_t<F>::max_finite();
/// Smallest positive normal value of F.
template <class F> inline constexpr double min_normal_v = format_of_t<F>::min_normal();
/// Smallest positive value of F.
template <class F> inline constexpr double min_subnormal_v = format_of_t<F>::min_subnormal();
/// Number of codes of F, 2^bits.
template <class F> inline constexpr int code_count_v = 1 << format_of_t<F>::bits;
/// Width of a code of F in bits.
template <class F> inline constexpr int bits_v = format_of_t<F>::bits;

}  // namespace kvq
