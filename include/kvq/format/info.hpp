/// \file
/// kvq/format/info.hpp — a printable description of each named format (host only).
///
/// The numbers are computed from the traits and the encoder itself (e.g. what NaN
/// becomes is kvq::encode of a NaN), so the table can never disagree with the code.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <string>

#include <kvq/format/decode.hpp>
#include <kvq/format/encode.hpp>

namespace kvq {

/// Runtime description of one format: its parameters and how it encodes the special
/// inputs (for tables and reports; made by describe()). The behaviour columns are
/// human-readable strings: a code in hex with its value.
struct format_info {
  /// format_name() of the format.
  const char* name;
  /// \var exponent_bits
  /// Width of the exponent field.

  /// \var mantissa_bits
  /// Width of the mantissa field.

  /// \var bias
  /// Exponent bias.

  /// Number of sign bits (0 or 1).
  int sign_bits, exponent_bits, mantissa_bits, bias;
  /// \var min_normal
  /// Smallest positive normal value.

  /// \var min_subnormal
  /// Smallest positive value (min_normal for formats without subnormals).

  /// Largest finite value.
  double max_finite, min_normal, min_subnormal;
  const char* specials;  ///< which codes are special
  /// \var nan_double
  /// What a negative double NaN encodes to ("-NaN -> code (value)").

  /// \var inf_sat
  /// What -Inf encodes to with overflow::satfinite.

  /// \var inf_nosat
  /// What -Inf encodes to with overflow::nosat.

  /// \var overflow_nosat
  /// What the finite 3e38f encodes to with overflow::nosat.

  /// \var neg_zero
  /// What -0.0f encodes to.

  /// \var negative_input
  /// "signed", or how an unsigned format treats a negative input (sign ignored).

  /// What a float quiet NaN encodes to (code and value).
  std::string nan_float, nan_double, inf_sat, inf_nosat, overflow_nosat, neg_zero, negative_input;
};

namespace detail {
inline std::string hex2(unsigned c) {
  char b[8];
  std::snprintf(b, sizeof b, "0x%02X", c & 0xFFu);
  return b;
}
/// A power of two as 2^k, anything else with %g.
inline std::string pretty(double v) {
  int e = 0;
  const double m = std::frexp(v, &e);
  char b[32];
  if (m == 0.5 && (e - 1 < -4 || e - 1 > 10)) std::snprintf(b, sizeof b, "2^%d", e - 1);
  else std::snprintf(b, sizeof b, "%g", v);
  return b;
}
template <class F>
std::string code_and_value(std::uint8_t c) {
  const float v = decode<F>(c);
  char b[48];
  if (std::isnan(v)) std::snprintf(b, sizeof b, "0x%02X (NaN)", c);
  else std::snprintf(b, sizeof b, "0x%02X (%g)", c, static_cast<double>(v));
  return b;
}
template <class F>
const char* specials_text() {
  switch (F::special) {
    case specials::ieee: return "IEEE: exp all-ones = Inf/NaN";
    case specials::finite_nan: return F::is_signed ? "no Inf; S.1111.111 = NaN" : "no Inf; all-ones = NaN";
    case specials::fnuz: return "no Inf, no -0; 0x80 = NaN";
    case specials::none: return "none (all codes finite)";
  }
  return "?";
}
}  // namespace detail

template <class F>
/// The format_info of format F (a traits or value type); the behaviour strings come
/// from running kvq::encode on the special inputs, so they describe the code as built.
format_info describe() {
  using T = format_of_t<F>;
  const float fnan = std::numeric_limits<float>::quiet_NaN();
  const double dnan = -std::numeric_limits<double>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  format_info i{};
  i.name = format_name<T>();
  i.sign_bits = T::is_signed ? 1 : 0;
  i.exponent_bits = T::exponent_bits;
  i.mantissa_bits = T::mantissa_bits;
  i.bias = T::bias;
  i.max_finite = T::max_finite();
  i.min_normal = T::min_normal();
  i.min_subnormal = T::min_subnormal();
  i.specials = detail::specials_text<T>();
  i.nan_float = detail::code_and_value<T>(encode<T>(fnan));
  i.nan_double = "-NaN -> " + detail::code_and_value<T>(encode<T>(dnan));
  i.inf_sat = "-Inf -> " + detail::code_and_value<T>(encode<T>(-inf, rounding::nearest_even, overflow::satfinite));
  i.inf_nosat = "-Inf -> " + detail::code_and_value<T>(encode<T>(-inf, rounding::nearest_even, overflow::nosat));
  const float big = 3.0e38f;
  i.overflow_nosat = detail::code_and_value<T>(encode<T>(big, rounding::nearest_even, overflow::nosat));
  i.neg_zero = detail::code_and_value<T>(encode<T>(-0.0f));
  i.negative_input = T::is_signed ? std::string("signed") : "abs(x): sign ignored";
  return i;
}

/// Descriptions of all named formats, in table order.
inline std::array<format_info, 10> all_format_infos() {
  return {describe<fmt::e4m3>(),     describe<fmt::e5m2>(),     describe<fmt::e3m2>(),
          describe<fmt::e2m3>(),     describe<fmt::e2m1>(),     describe<fmt::ue8m0>(),
          describe<fmt::ue4m3>(),    describe<fmt::e4m3fnuz>(), describe<fmt::e5m2fnuz>(),
          describe<fmt::e4m3b11fnuz>()};
}

/// The formats table as GitHub-flavoured Markdown (what `kvq formats` prints and
/// what docs/formats.md shows).
inline std::string format_table_markdown() {
  std::string s =
      "| format | s-e-m | bias | max finite | min normal | min subnormal | specials | float NaN -> | "
      "double NaN | Inf, satfinite | Inf, nosat | overflow, nosat | -0 -> | negative input |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& i : all_format_infos()) {
    char row[96];
    std::snprintf(row, sizeof row, "| %s | %d-%d-%d | %d | ", i.name, i.sign_bits, i.exponent_bits, i.mantissa_bits,
                  i.bias);
    s += row;
    s += detail::pretty(i.max_finite) + " | " + detail::pretty(i.min_normal) + " | " + detail::pretty(i.min_subnormal) +
         " | ";
    s += std::string(i.specials) + " | " + i.nan_float + " | " + i.nan_double + " | " + i.inf_sat + " | " +
         i.inf_nosat + " | " + i.overflow_nosat + " | " + i.neg_zero + " | " + i.negative_input + " |\n";
  }
  return s;
}

}  // namespace kvq
