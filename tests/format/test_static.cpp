// Compile-time tests: the format API is constexpr (bit casts via __builtin_bit_cast),
// so decode tables, encodes, round trips and numeric_limits are checked by the
// compiler. The reference values are computed here from the bit layout (oracle.hpp's
// layouts), independently of kvq. The TEST_CASE at the end repeats the same checks at
// run time so that a failure is also reported by the test runner.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <type_traits>

#include <kvq/format.hpp>

#include "formats_under_test.hpp"

using namespace kvqtest;

namespace {

constexpr double cx_pow2(int p) {
  double r = 1.0;
  for (; p > 0; --p) r *= 2.0;
  for (; p < 0; ++p) r *= 0.5;
  return r;
}

// Value of a code from the layout fields; NaN codes report false in `is_number`.
struct cx_value {
  bool is_number;
  double v;
};
constexpr cx_value cx_decode(const layout& L, unsigned code) {
  const unsigned sign = L.is_signed ? 1u << (L.ebits + L.mbits) : 0u;
  const unsigned magmask = (1u << (L.ebits + L.mbits)) - 1u;
  const unsigned mag = code & magmask;
  const unsigned e = mag >> L.mbits;
  const unsigned m = mag & ((1u << L.mbits) - 1u);
  const unsigned eall = (1u << L.ebits) - 1u;
  const bool neg = (code & sign) != 0;
  if (L.special == sp::finite_nan && mag == magmask) return {false, 0};
  if (L.special == sp::fnuz && code == sign) return {false, 0};
  if (L.special == sp::ieee && e == eall) {
    if (m != 0) return {false, 0};
    return {true, neg ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity()};
  }
  double v = (e == 0 && L.subnormals)
                 ? static_cast<double>(m) * cx_pow2(1 - L.bias - static_cast<int>(L.mbits))
                 : static_cast<double>((1u << L.mbits) + m) * cx_pow2(static_cast<int>(e) - L.bias - L.mbits);
  return {true, neg ? -v : v};
}

// kvq::decode (float and double) equals the layout-derived value for every code.
template <class F>
constexpr bool decode_table_matches() {
  const layout& L = ref<F>::L;
  for (unsigned c = 0; c < L.code_count(); ++c) {
    const cx_value r = cx_decode(L, c);
    const auto code = static_cast<std::uint8_t>(c);
    const float f = kvq::decode<F, float>(code);
    const double d = kvq::decode<F, double>(code);
    if (!r.is_number) {
      if (f == f || d == d || !kvq::is_nan_code<F>(code)) return false;
    } else {
      if (static_cast<double>(f) != r.v || d != r.v || kvq::is_nan_code<F>(code)) return false;
    }
  }
  return true;
}

// Every number code survives decode -> encode in every mode (Inf with nosat only).
template <class F>
constexpr bool roundtrip_all() {
  constexpr kvq::rounding modes[] = {kvq::rounding::nearest_even, kvq::rounding::toward_zero, kvq::rounding::up,
                                     kvq::rounding::down, kvq::rounding::nearest_away};
  for (unsigned c = 0; c < static_cast<unsigned>(kvq::code_count_v<F>); ++c) {
    const auto code = static_cast<std::uint8_t>(c);
    if (kvq::is_nan_code<F>(code)) continue;
    for (kvq::rounding r : modes) {
      if (kvq::encode<F>(kvq::decode<F>(code), r, kvq::overflow::nosat) != code) return false;
      if (kvq::encode<F>(kvq::decode<F, double>(code), r, kvq::overflow::nosat) != code) return false;
    }
  }
  return true;
}

// Every midpoint between adjacent positive number codes rounds (nearest_even) to the
// code with the even significand, and nearest_away to the larger one.
template <class F>
constexpr bool midpoints_round_to_even() {
  const layout& L = ref<F>::L;
  const unsigned top = (1u << (L.ebits + L.mbits)) - 1u;
  for (unsigned c = 0; c + 1 <= top; ++c) {
    const cx_value lo = cx_decode(L, c), hi = cx_decode(L, c + 1);
    if (!lo.is_number || !hi.is_number || hi.v == std::numeric_limits<double>::infinity()) continue;
    const double mid = 0.5 * (lo.v + hi.v);
    // Significand parity: the mantissa LSB; ue8m0 (no mantissa) has an odd significand.
    const unsigned even = L.mbits > 0 ? ((c & 1u) == 0 ? c : c + 1) : c + 1;
    if (kvq::encode<F>(mid) != even) return false;
    if (kvq::encode<F>(mid, kvq::rounding::nearest_away) != c + 1) return false;
    if (kvq::encode<F>(mid, kvq::rounding::toward_zero) != c) return false;
  }
  return true;
}

}  // namespace

#define KVQ_STATIC_FORMAT_CHECKS(F)                                   \
  static_assert(decode_table_matches<F>(), #F ": decode table");      \
  static_assert(roundtrip_all<F>(), #F ": decode -> encode");         \
  static_assert(midpoints_round_to_even<F>(), #F ": midpoint ties");

KVQ_STATIC_FORMAT_CHECKS(kvq::fmt::e4m3)
KVQ_STATIC_FORMAT_CHECKS(kvq::fmt::e5m2)
KVQ_STATIC_FORMAT_CHECKS(kvq::fmt::e3m2)
KVQ_STATIC_FORMAT_CHECKS(kvq::fmt::e2m3)
KVQ_STATIC_FORMAT_CHECKS(kvq::fmt::e2m1)
KVQ_STATIC_FORMAT_CHECKS(kvq::fmt::ue8m0)
KVQ_STATIC_FORMAT_CHECKS(kvq::fmt::ue4m3)
KVQ_STATIC_FORMAT_CHECKS(kvq::fmt::e4m3fnuz)
KVQ_STATIC_FORMAT_CHECKS(kvq::fmt::e5m2fnuz)
KVQ_STATIC_FORMAT_CHECKS(kvq::fmt::e4m3b11fnuz)

namespace {
constexpr float finf = std::numeric_limits<float>::infinity();
constexpr float fnan = std::numeric_limits<float>::quiet_NaN();
constexpr double dnan = std::numeric_limits<double>::quiet_NaN();
using kvq::overflow;
using kvq::rounding;
namespace fmt = kvq::fmt;
}  // namespace

// A handful of encodes with the edge values of docs/design.md "Conversion contract".
// e4m3: 464 is the midpoint of 448 and (virtual) 480 and ties to 448; above it
// satfinite gives 448 and nosat NaN; a float NaN loses its sign.
static_assert(kvq::encode<fmt::e4m3>(464.0f) == 0x7E, "");
static_assert(kvq::encode<fmt::e4m3>(464.0001f, rounding::nearest_even, overflow::satfinite) == 0x7E, "");
static_assert(kvq::encode<fmt::e4m3>(464.0001f, rounding::nearest_even, overflow::nosat) == 0x7F, "");
static_assert(kvq::encode<fmt::e4m3>(-finf) == 0xFE, "");
static_assert(kvq::encode<fmt::e4m3>(-finf, rounding::nearest_even, overflow::nosat) == 0xFF, "");
static_assert(kvq::encode<fmt::e4m3>(-fnan) == 0x7F, "");
static_assert(kvq::encode<fmt::e4m3>(-0.0f) == 0x80, "");
static_assert(kvq::encode<fmt::e4m3>(1.0f) == 0x38, "");
static_assert(kvq::encode<fmt::e4m3>(0.0009765625f) == 0x00, "");  // 2^-10: half of 2^-9 ties to 0
static_assert(kvq::encode<fmt::e4m3>(0.0009765626f) == 0x01, "");
// double rounds once: 1.0625 + 1e-12 is above the 1.0/1.125 midpoint.
static_assert(kvq::encode<fmt::e4m3>(1.0625 + 1e-12) == 0x39, "");
static_assert(kvq::encode<fmt::e4m3>(static_cast<float>(1.0625 + 1e-12)) == 0x38, "");
// e5m2: overflow at 61440 (midpoint of 57344 and 65536, ties to the even 65536 = Inf).
static_assert(kvq::encode<fmt::e5m2>(61440.0f, rounding::nearest_even, overflow::nosat) == 0x7C, "");
static_assert(kvq::encode<fmt::e5m2>(61439.996f, rounding::nearest_even, overflow::nosat) == 0x7B, "");
static_assert(kvq::encode<fmt::e5m2>(-finf) == 0xFB, "");
static_assert(kvq::encode<fmt::e5m2>(-finf, rounding::nearest_even, overflow::nosat) == 0xFC, "");
static_assert(kvq::encode<fmt::e5m2>(fnan) == 0x7F, "");
// e5m2 double NaN: sign kept, 0x7E | top payload bit (cuda_fp8.hpp).
static_assert(kvq::encode<fmt::e5m2>(-dnan) == 0xFE, "");
// e2m1: always saturating; NaN -> +6; RZ truncates.
static_assert(kvq::encode<fmt::e2m1>(-finf, rounding::nearest_even, overflow::nosat) == 0xF, "");
static_assert(kvq::encode<fmt::e2m1>(fnan) == 0x7, "");
static_assert(kvq::encode<fmt::e2m1>(2.5f) == 0x4, "");  // tie between 2 (0x4) and 3 (0x5)
static_assert(kvq::encode<fmt::e2m1>(2.99f, rounding::toward_zero) == 0x4, "");
static_assert(kvq::encode<fmt::e2m1>(-0.25f) == 0x8, "");  // tie 0 / 0.5 -> -0
static_assert(kvq::encode<fmt::e3m2>(fnan) == 0x1F, "");
static_assert(kvq::encode<fmt::e2m3>(100.0f) == 0x1F, "");
// ue8m0: sign ignored, RZ = floor(log2), RP = ceil(log2), no zero, NaN 0xFF.
static_assert(kvq::encode<fmt::ue8m0>(3.0f, rounding::toward_zero) == 128, "");
static_assert(kvq::encode<fmt::ue8m0>(3.0f, rounding::up) == 129, "");
static_assert(kvq::encode<fmt::ue8m0>(-3.0f, rounding::up) == 129, "");
static_assert(kvq::encode<fmt::ue8m0>(0.0f, rounding::up) == 0x00, "");
static_assert(kvq::encode<fmt::ue8m0>(fnan, rounding::up) == 0xFF, "");
static_assert(kvq::encode<fmt::ue8m0>(finf, rounding::toward_zero, overflow::satfinite) == 0xFE, "");
static_assert(kvq::encode<fmt::ue8m0>(finf, rounding::toward_zero, overflow::nosat) == 0xFF, "");
static_assert(kvq::encode<fmt::ue8m0>(3.0e38f, rounding::up, overflow::nosat) == 0xFF, "");
static_assert(kvq::encode<fmt::ue8m0>(3.0e38f, rounding::toward_zero, overflow::nosat) == 0xFE, "");
// fnuz: no -0, NaN and nosat overflow are 0x80.
static_assert(kvq::encode<fmt::e4m3fnuz>(-0.0f) == 0x00, "");
static_assert(kvq::encode<fmt::e4m3fnuz>(-1e-30f) == 0x00, "");
static_assert(kvq::encode<fmt::e4m3fnuz>(fnan) == 0x80, "");
static_assert(kvq::encode<fmt::e4m3fnuz>(-1000.0f, rounding::nearest_even, overflow::nosat) == 0x80, "");
static_assert(kvq::encode<fmt::e4m3fnuz>(-1000.0f) == 0xFF, "");
// e4m3b11fnuz (bias 11): 1.0 = 2^0 has biased exponent 11 (code 0x58), max 0x7F = 30,
// the smallest subnormal 0x01 = 2^-13.
static_assert(kvq::encode<fmt::e4m3b11fnuz>(1.0f) == 0x58, "");
static_assert(kvq::encode<fmt::e4m3b11fnuz>(30.0f) == 0x7F, "");
static_assert(kvq::encode<fmt::e4m3b11fnuz>(-31.0f) == 0xFF, "");
static_assert(kvq::encode<fmt::e4m3b11fnuz>(31.0f, rounding::nearest_even, overflow::nosat) == 0x80, "");
static_assert(kvq::encode<fmt::e4m3b11fnuz>(0x1p-13f) == 0x01, "");
static_assert(kvq::encode<fmt::e4m3b11fnuz>(0x1p-14f) == 0x00, "");  // the tie to even: 0
static_assert(kvq::encode<fmt::e4m3b11fnuz>(-0.0f) == 0x00, "");
static_assert(kvq::encode<fmt::e4m3b11fnuz>(fnan) == 0x80, "");
// ue4m3: |x|.
static_assert(kvq::encode<fmt::ue4m3>(-448.0f) == 0x7E, "");

// Stochastic rounding: random_bits = 0 truncates; 2^32-1 rounds any inexact value up.
// Whether encode_stochastic is usable in a constant expression is detected first (a
// non-constant template argument is a substitution failure), so that a
// non-constexpr implementation fails the test case below instead of the build.
namespace {
template <class F, class = void>
struct stochastic_is_constexpr : std::false_type {};
template <class F>
struct stochastic_is_constexpr<
    F, std::void_t<std::integral_constant<int, (kvq::encode_stochastic<F>(1.1f, 0xFFFFFFFFu), 0)>>>
    : std::true_type {};

template <class F, bool = stochastic_is_constexpr<F>::value>
struct stochastic_static_checks {
  static constexpr bool checked = false;
};
template <class F>
struct stochastic_static_checks<F, true> {
  static_assert(kvq::encode_stochastic<F>(1.1f, 0u) == 0x38, "");
  static_assert(kvq::encode_stochastic<F>(1.1f, 0xFFFFFFFFu) == 0x39, "");
  static_assert(kvq::encode_stochastic<F>(1.0f, 0xFFFFFFFFu) == 0x38, "");
  static_assert(kvq::encode_stochastic<F>(-1.1, 0xFFFFFFFFu) == 0xB9, "");
  static constexpr bool checked = true;
};
}  // namespace

// Value types and numeric_limits are constexpr too.
static_assert(sizeof(kvq::e4m3) == 1 && sizeof(kvq::e2m1) == 1 && sizeof(kvq::ue8m0) == 1, "");
static_assert(static_cast<float>(std::numeric_limits<kvq::e4m3>::max()) == 448.0f, "");
static_assert(static_cast<float>(std::numeric_limits<kvq::e5m2>::lowest()) == -57344.0f, "");
static_assert(static_cast<float>(std::numeric_limits<kvq::e2m1>::denorm_min()) == 0.5f, "");
static_assert(kvq::e4m3(1.0f).code() == 0x38, "");
static_assert(static_cast<double>(kvq::e2m3::from_code(0x1F)) == 7.5, "");
static_assert(kvq::max_finite_v<fmt::e4m3fnuz> == 240.0, "");
static_assert(kvq::max_finite_v<fmt::e4m3b11fnuz> == 30.0, "");
static_assert(kvq::min_subnormal_v<fmt::e4m3b11fnuz> == cx_pow2(-13), "");
static_assert(kvq::min_subnormal_v<fmt::ue8m0> == cx_pow2(-127), "");

TEST_CASE("compile-time checks also hold at run time", "[static]") {
  // The same functions, evaluated at run time (guards against a constexpr path that
  // differs from the run-time one).
  volatile bool run = true;
  if (run) {
    CHECK(decode_table_matches<kvq::fmt::e4m3>());
    CHECK(decode_table_matches<kvq::fmt::e5m2>());
    CHECK(decode_table_matches<kvq::fmt::e3m2>());
    CHECK(decode_table_matches<kvq::fmt::e2m3>());
    CHECK(decode_table_matches<kvq::fmt::e2m1>());
    CHECK(decode_table_matches<kvq::fmt::ue8m0>());
    CHECK(decode_table_matches<kvq::fmt::ue4m3>());
    CHECK(decode_table_matches<kvq::fmt::e4m3fnuz>());
    CHECK(decode_table_matches<kvq::fmt::e5m2fnuz>());
    CHECK(decode_table_matches<kvq::fmt::e4m3b11fnuz>());
    CHECK(midpoints_round_to_even<kvq::fmt::e4m3>());
    CHECK(midpoints_round_to_even<kvq::fmt::ue8m0>());
    CHECK(roundtrip_all<kvq::fmt::e5m2>());
  }
}

TEST_CASE("encode_stochastic is usable in constant expressions", "[static]") {
  INFO("kvq::encode_stochastic<e4m3>(1.1f, bits) is not a constant expression with this compiler");
  CHECK(stochastic_static_checks<kvq::fmt::e4m3>::checked);
  // Run-time values of the same checks.
  CHECK(kvq::encode_stochastic<kvq::fmt::e4m3>(1.1f, 0u) == 0x38);
  CHECK(kvq::encode_stochastic<kvq::fmt::e4m3>(1.1f, 0xFFFFFFFFu) == 0x39);
  CHECK(kvq::encode_stochastic<kvq::fmt::e4m3>(1.0f, 0xFFFFFFFFu) == 0x38);
  CHECK(kvq::encode_stochastic<kvq::fmt::e4m3>(-1.1, 0xFFFFFFFFu) == 0xB9);
}
