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

  static constexpr bool is_signed = Signed;
  static constexpr int exponent_bits = ExpBits;
  static constexpr int mantissa_bits = ManBits;
  static constexpr int bias = Bias;
  static constexpr specials special = Specials;
  static constexpr bool has_subnormals = Subnormals;
  static constexpr int bits = (Signed ? 1 : 0) + ExpBits + ManBits;

  static constexpr bool has_inf = Specials == specials::ieee;
  static constexpr bool has_nan = Specials != specials::none;
  /// Without subnormals the all-zero code is the smallest normal (ue8m0: 2^-127).
  static constexpr bool has_zero = Subnormals;
  static constexpr bool has_negative_zero = Signed && Subnormals && Specials != specials::fnuz;

  /// Mask of the magnitude bits, and of the sign bit (0 for unsigned formats).
  static constexpr std::uint8_t magnitude_mask = static_cast<std::uint8_t>((1u << (ExpBits + ManBits)) - 1u);
  static constexpr std::uint8_t sign_mask = Signed ? static_cast<std::uint8_t>(1u << (ExpBits + ManBits)) : 0u;
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

  /// Unbiased exponent of the smallest normal binade, and of the largest finite one.
  static constexpr int emin = (Subnormals ? 1 : 0) - Bias;
  static constexpr int emax = static_cast<int>(max_finite_code >> ManBits) - Bias;

  /// Largest finite value, smallest normal, smallest positive value.
  KVQ_HD static constexpr double max_finite() noexcept {
    return static_cast<double>((1u << ManBits) + (max_finite_code & ((1u << ManBits) - 1u))) *
           detail::pow2_double(emax - ManBits);
  }
  KVQ_HD static constexpr double min_normal() noexcept { return detail::pow2_double(emin); }
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

template <class F> inline constexpr double max_finite_v = format_of_t<F>::max_finite();
template <class F> inline constexpr double min_normal_v = format_of_t<F>::min_normal();
template <class F> inline constexpr double min_subnormal_v = format_of_t<F>::min_subnormal();
template <class F> inline constexpr int code_count_v = 1 << format_of_t<F>::bits;
template <class F> inline constexpr int bits_v = format_of_t<F>::bits;

}  // namespace kvq
