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
struct minifloat {
  using format_type = Fmt;

  minifloat() = default;
  KVQ_HD constexpr explicit minifloat(float x) noexcept : code_(encode<Fmt>(x)) {}
  KVQ_HD constexpr explicit minifloat(double x) noexcept : code_(encode<Fmt>(x)) {}
  /// From an integer through double (exact for |v| < 2^53); Eigen's Zero()/Ones() use this.
  KVQ_HD constexpr explicit minifloat(int v) noexcept : code_(encode<Fmt>(static_cast<double>(v))) {}

  /// The value with the given code (bits above the format's width are cleared).
  KVQ_HD static constexpr minifloat from_code(std::uint8_t c) noexcept {
    minifloat r{};
    r.code_ = static_cast<std::uint8_t>(c & Fmt::code_mask);
    return r;
  }
  KVQ_HD constexpr std::uint8_t code() const noexcept { return code_; }

  KVQ_HD constexpr explicit operator float() const noexcept { return decode<Fmt, float>(code_); }
  KVQ_HD constexpr explicit operator double() const noexcept { return decode<Fmt, double>(code_); }

  KVQ_HD constexpr bool is_nan() const noexcept { return is_nan_code<Fmt>(code_); }
  KVQ_HD constexpr bool is_inf() const noexcept { return is_inf_code<Fmt>(code_); }

  KVQ_HD friend constexpr bool operator==(minifloat a, minifloat b) noexcept {
    return static_cast<float>(a) == static_cast<float>(b);
  }
  KVQ_HD friend constexpr bool operator!=(minifloat a, minifloat b) noexcept { return !(a == b); }
  KVQ_HD friend constexpr bool operator<(minifloat a, minifloat b) noexcept {
    return static_cast<float>(a) < static_cast<float>(b);
  }
  KVQ_HD friend constexpr bool operator>(minifloat a, minifloat b) noexcept { return b < a; }
  KVQ_HD friend constexpr bool operator<=(minifloat a, minifloat b) noexcept {
    return static_cast<float>(a) <= static_cast<float>(b);
  }
  KVQ_HD friend constexpr bool operator>=(minifloat a, minifloat b) noexcept { return b <= a; }
  KVQ_HD friend constexpr minifloat operator-(minifloat a) noexcept {
    // Exact negation: flip the sign bit (no -0 / NaN sign in fnuz; unsigned has none).
    if constexpr (!Fmt::is_signed) return a;
    if (Fmt::special == specials::fnuz && (a.code_ & Fmt::magnitude_mask) == 0) return a;
    return from_code(static_cast<std::uint8_t>(a.code_ ^ Fmt::sign_mask));
  }

 private:
  std::uint8_t code_;
};

using e4m3 = minifloat<fmt::e4m3>;
using e5m2 = minifloat<fmt::e5m2>;
using e3m2 = minifloat<fmt::e3m2>;
using e2m3 = minifloat<fmt::e2m3>;
using e2m1 = minifloat<fmt::e2m1>;
using ue8m0 = minifloat<fmt::ue8m0>;
using ue4m3 = minifloat<fmt::ue4m3>;
using e4m3fnuz = minifloat<fmt::e4m3fnuz>;
using e5m2fnuz = minifloat<fmt::e5m2fnuz>;

static_assert(sizeof(e4m3) == 1, "one byte of storage");

}  // namespace kvq

namespace std {
template <class Fmt>
class numeric_limits<kvq::minifloat<Fmt>> {
  using T = kvq::minifloat<Fmt>;
  static constexpr T code(unsigned c) noexcept { return T::from_code(static_cast<std::uint8_t>(c)); }

 public:
  static constexpr bool is_specialized = true;
  static constexpr bool is_signed = Fmt::is_signed;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = Fmt::has_inf;
  static constexpr bool has_quiet_NaN = Fmt::has_nan;
  static constexpr bool has_signaling_NaN = false;
#if __cplusplus < 202302L
  static constexpr float_denorm_style has_denorm = Fmt::has_subnormals ? denorm_present : denorm_absent;
  static constexpr bool has_denorm_loss = false;
#endif
  static constexpr float_round_style round_style = round_to_nearest;
  static constexpr bool is_iec559 = false;
  static constexpr bool is_bounded = true;
  static constexpr bool is_modulo = false;
  static constexpr int digits = Fmt::mantissa_bits + 1;
  static constexpr int digits10 = 0;  // floor((digits-1)*log10(2)) is 0 for every kvq format
  static constexpr int max_digits10 = Fmt::mantissa_bits <= 1 ? 2 : (Fmt::mantissa_bits <= 4 ? 3 : 4);
  static constexpr int radix = 2;
  static constexpr int min_exponent = Fmt::emin + 1;
  static constexpr int min_exponent10 = 0;  // not meaningful for 8-bit formats; see min()
  static constexpr int max_exponent = Fmt::emax + 1;
  static constexpr int max_exponent10 = 0;
  static constexpr bool traps = false;
  static constexpr bool tinyness_before = false;

  /// Smallest positive normal value.
  static constexpr T min() noexcept { return code(Fmt::has_subnormals ? (1u << Fmt::mantissa_bits) : 0u); }
  static constexpr T max() noexcept { return code(Fmt::max_finite_code); }
  static constexpr T lowest() noexcept {
    return Fmt::is_signed ? code(Fmt::max_finite_code | Fmt::sign_mask) : code(0u);
  }
  /// Distance from 1 to the next larger value: 2^-M.
  static constexpr T epsilon() noexcept {
    return T::from_code(kvq::encode<Fmt>(static_cast<double>(kvq::detail::pow2_double(-Fmt::mantissa_bits))));
  }
  static constexpr T round_error() noexcept { return T::from_code(kvq::encode<Fmt>(0.5)); }
  static constexpr T infinity() noexcept { return Fmt::has_inf ? code(Fmt::inf_code) : T{}; }
  static constexpr T quiet_NaN() noexcept { return Fmt::has_nan ? code(Fmt::nan_code) : T{}; }
  static constexpr T signaling_NaN() noexcept { return quiet_NaN(); }
  static constexpr T denorm_min() noexcept { return Fmt::has_subnormals ? code(1u) : min(); }
};
}  // namespace std
