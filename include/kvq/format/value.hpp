/// \file
/// kvq/format/value.hpp — one-byte value types (kvq::e4m3, kvq::e2m1, ...).
///
/// A minifloat<F> stores one code. Conversions are explicit in both directions
/// (from float/double with the default policy: nearest_even, satfinite; to the
/// exact float/double value), so a quantization never happens by accident.
/// Comparisons compare values (NaN is unordered, +0 == -0). There is no
/// arithmetic: compute in float and convert, which is what the GPU does too.
#pragma once

#include <cstdint>
#include <limits>

#include <kvq/config.hpp>
#include <kvq/format/decode.hpp>
#include <kvq/format/encode.hpp>

namespace kvq {

template <class Fmt>
/// A value of format Fmt stored as its code (one byte, right-aligned). Constructed from
/// float or double with kvq::encode (rounding::nearest_even, overflow::satfinite, as
/// `cvt.rn.satfinite`); converts back exactly with kvq::decode. Comparisons compare the
/// decoded values (IEEE semantics: NaN is unordered, +0 == -0).
struct minifloat {
  /// The traits type (a kvq::minifloat_format).
  using format_type = Fmt;

  /// Uninitialised (trivial), like the built-in floating types.
  minifloat() = default;
  /// Rounds x to the nearest code (ties to even, satfinite).
  KVQ_HD constexpr explicit minifloat(float x) noexcept : code_(encode<Fmt>(x)) {}
  /// Rounds x to the nearest code directly from double (one rounding, never via float).
  KVQ_HD constexpr explicit minifloat(double x) noexcept : code_(encode<Fmt>(x)) {}
  /// From an integer through double (exact for |v| < 2^53); Eigen's Zero()/Ones() use this.
  KVQ_HD constexpr explicit minifloat(int v) noexcept : code_(encode<Fmt>(static_cast<double>(v))) {}

  /// The value with the given code (bits above the format's width are cleared).
  KVQ_HD static constexpr minifloat from_code(std::uint8_t c) noexcept {
    minifloat r{};
    r.code_ = static_cast<std::uint8_t>(c & Fmt::code_mask);
    return r;
  }
  /// The code (right-aligned in the byte).
  KVQ_HD constexpr std::uint8_t code() const noexcept { return code_; }

  /// The exact value as a float (NaN codes give a quiet NaN with the code's sign).
  KVQ_HD constexpr explicit operator float() const noexcept { return decode<Fmt, float>(code_); }
  /// The exact value as a double.
  KVQ_HD constexpr explicit operator double() const noexcept { return decode<Fmt, double>(code_); }

  /// True if the code is a NaN code of Fmt.
  KVQ_HD constexpr bool is_nan() const noexcept { return is_nan_code<Fmt>(code_); }
  /// True if the code is +-Inf (only formats with specials::ieee).
  KVQ_HD constexpr bool is_inf() const noexcept { return is_inf_code<Fmt>(code_); }

  /// Equal as decoded values: +0 == -0, NaN != NaN.
  KVQ_HD friend constexpr bool operator==(minifloat a, minifloat b) noexcept {
    return static_cast<float>(a) == static_cast<float>(b);
  }
  /// !(a == b).
  KVQ_HD friend constexpr bool operator!=(minifloat a, minifloat b) noexcept { return !(a == b); }
  /// Less than, on the decoded values (false if either is NaN).
  KVQ_HD friend constexpr bool operator<(minifloat a, minifloat b) noexcept {
    return static_cast<float>(a) < static_cast<float>(b);
  }
  /// b < a.
  KVQ_HD friend constexpr bool operator>(minifloat a, minifloat b) noexcept { return b < a; }
  /// Less or equal, on the decoded values (false if either is NaN).
  KVQ_HD friend constexpr bool operator<=(minifloat a, minifloat b) noexcept {
    return static_cast<float>(a) <= static_cast<float>(b);
  }
  /// b <= a.
  KVQ_HD friend constexpr bool operator>=(minifloat a, minifloat b) noexcept { return b <= a; }
  /// Exact negation: flips the sign bit; unsigned formats and the fnuz zero/NaN code
  /// return a unchanged.
  KVQ_HD friend constexpr minifloat operator-(minifloat a) noexcept {
    // Exact negation: flip the sign bit (no -0 / NaN sign in fnuz; unsigned has none).
    if constexpr (!Fmt::is_signed) return a;
    if (Fmt::special == specials::fnuz && (a.code_ & Fmt::magnitude_mask) == 0) return a;
    return from_code(static_cast<std::uint8_t>(a.code_ ^ Fmt::sign_mask));
  }

 private:
  std::uint8_t code_;
};

/// OCP FP8 E4M3 value (max 448).
using e4m3 = minifloat<fmt::e4m3>;
/// OCP FP8 E5M2 value (IEEE Inf/NaN).
using e5m2 = minifloat<fmt::e5m2>;
/// FP6 E3M2 value.
using e3m2 = minifloat<fmt::e3m2>;
/// FP6 E2M3 value.
using e2m3 = minifloat<fmt::e2m3>;
/// FP4 E2M1 value.
using e2m1 = minifloat<fmt::e2m1>;
/// UE8M0 scale value (a power of two).
using ue8m0 = minifloat<fmt::ue8m0>;
/// UE4M3 (unsigned E4M3) scale value.
using ue4m3 = minifloat<fmt::ue4m3>;
/// E4M3 fnuz value.
using e4m3fnuz = minifloat<fmt::e4m3fnuz>;
/// E5M2 fnuz value.
using e5m2fnuz = minifloat<fmt::e5m2fnuz>;
/// E4M3 bias-11 fnuz value.
using e4m3b11fnuz = minifloat<fmt::e4m3b11fnuz>;

static_assert(sizeof(e4m3) == 1, "one byte of storage");

}  // namespace kvq

namespace std {
template <class Fmt>
/// std::numeric_limits for kvq::minifloat, from the format's traits. min() is the
/// smallest normal, denorm_min() the smallest positive value; the base-10 exponents are 0.
class numeric_limits<kvq::minifloat<Fmt>> {
  using T = kvq::minifloat<Fmt>;
  static constexpr T code(unsigned c) noexcept { return T::from_code(static_cast<std::uint8_t>(c)); }

 public:
  /// Always true.
  static constexpr bool is_specialized = true;
  /// True if the format has a sign bit.
  static constexpr bool is_signed = Fmt::is_signed;
  /// Always false.
  static constexpr bool is_integer = false;
  /// Always false.
  static constexpr bool is_exact = false;
  /// True only for IEEE-special formats (e5m2).
  static constexpr bool has_infinity = Fmt::has_inf;
  /// True if the format has a NaN code.
  static constexpr bool has_quiet_NaN = Fmt::has_nan;
  /// Always false: kvq formats have no signalling NaN (signaling_NaN() is the quiet one).
  static constexpr bool has_signaling_NaN = false;
#if __cplusplus < 202302L
  /// denorm_present if the format has subnormals (all but ue8m0).
  static constexpr float_denorm_style has_denorm = Fmt::has_subnormals ? denorm_present : denorm_absent;
  /// Always false.
  static constexpr bool has_denorm_loss = false;
#endif
  /// round_to_nearest: the constructors round to nearest even.
  static constexpr float_round_style round_style = round_to_nearest;
  /// Always false.
  static constexpr bool is_iec559 = false;
  /// Always true.
  static constexpr bool is_bounded = true;
  /// Always false.
  static constexpr bool is_modulo = false;
  /// Significand digits in base 2 (mantissa bits + the implicit bit).
  static constexpr int digits = Fmt::mantissa_bits + 1;
  /// floor((digits - 1) * log10(2)): 0 for every kvq format.
  static constexpr int digits10 = 0;  // floor((digits-1)*log10(2)) is 0 for every kvq format
  /// Decimal digits needed to round-trip every value.
  static constexpr int max_digits10 = Fmt::mantissa_bits <= 1 ? 2 : (Fmt::mantissa_bits <= 4 ? 3 : 4);
  /// Always 2.
  static constexpr int radix = 2;
  /// One more than the exponent of the smallest normal (C convention, significand in [0.5, 1)).
  static constexpr int min_exponent = Fmt::emin + 1;
  /// Not meaningful for 8-bit formats: 0 (see min()).
  static constexpr int min_exponent10 = 0;  // not meaningful for 8-bit formats; see min()
  /// One more than the exponent of the largest finite binade (C convention).
  static constexpr int max_exponent = Fmt::emax + 1;
  /// Not meaningful for 8-bit formats: 0.
  static constexpr int max_exponent10 = 0;
  /// Always false.
  static constexpr bool traps = false;
  /// Always false.
  static constexpr bool tinyness_before = false;

  /// Smallest positive normal value.
  static constexpr T min() noexcept { return code(Fmt::has_subnormals ? (1u << Fmt::mantissa_bits) : 0u); }
  /// Largest finite value.
  static constexpr T max() noexcept { return code(Fmt::max_finite_code); }
  /// Most negative finite value (0 for unsigned formats).
  static constexpr T lowest() noexcept {
    return Fmt::is_signed ? code(Fmt::max_finite_code | Fmt::sign_mask) : code(0u);
  }
  /// Distance from 1 to the next larger value: 2^-M.
  static constexpr T epsilon() noexcept {
    return T::from_code(kvq::encode<Fmt>(static_cast<double>(kvq::detail::pow2_double(-Fmt::mantissa_bits))));
  }
  /// 0.5 (maximum rounding error in ulps of round to nearest).
  static constexpr T round_error() noexcept { return T::from_code(kvq::encode<Fmt>(0.5)); }
  /// +Inf where the format has one, else a value-initialised (+0) minifloat.
  static constexpr T infinity() noexcept { return Fmt::has_inf ? code(Fmt::inf_code) : T{}; }
  /// The canonical NaN code where the format has one, else a value-initialised (+0) minifloat.
  static constexpr T quiet_NaN() noexcept { return Fmt::has_nan ? code(Fmt::nan_code) : T{}; }
  /// The same as quiet_NaN().
  static constexpr T signaling_NaN() noexcept { return quiet_NaN(); }
  /// Smallest positive value (min() without subnormals).
  static constexpr T denorm_min() noexcept { return Fmt::has_subnormals ? code(1u) : min(); }
};
}  // namespace std
