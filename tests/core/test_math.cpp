// Accuracy of kvq::math (quick version: a strided sweep over the float patterns, edge
// cases, the double functions on random inputs, and the constants). The exhaustive
// sweep over every float of the used ranges is test_math_exhaustive.cpp.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <sstream>

#include <kvq/core/math.hpp>

#include "math_oracle.hpp"

namespace km = kvq::math;
using kvqtest::fn;
using kvqtest::mp50;

namespace {

float kvq_eval(fn f, float x) {
  switch (f) {
    case fn::exp: return km::exp(x);
    case fn::exp2: return km::exp2(x);
    case fn::log: return km::log(x);
    case fn::log2: return km::log2(x);
    case fn::sin: return km::sin(x);
    default: return km::cos(x);
  }
}

struct sweep_result {
  std::uint64_t checked = 0, one_ulp = 0, bad = 0;
  std::string first_bad;
};

// Every `stride`-th bit pattern in [lo, hi] (inclusive), both given as bit patterns.
sweep_result sweep(fn f, std::uint32_t lo, std::uint32_t hi, std::uint32_t stride) {
  sweep_result r;
  for (std::uint64_t u = lo; u <= hi; u += stride) {
    const float x = kvqtest::ffrom(static_cast<std::uint32_t>(u));
    const float want = kvqtest::correctly_rounded(f, x);
    const float got = kvq_eval(f, x);
    ++r.checked;
    const auto v = kvqtest::judge(got, want);
    if (v == kvqtest::verdict::one_ulp) ++r.one_ulp;
    if (v == kvqtest::verdict::bad) {
      if (r.bad == 0) {
        std::ostringstream os;
        os.precision(9);
        os << kvqtest::fn_name(f) << "(" << x << ") = " << got << ", correctly rounded " << want;
        r.first_bad = os.str();
      }
      ++r.bad;
    }
  }
  return r;
}

}  // namespace

TEST_CASE("math constants match their multiprecision values", "[math][quick]") {
  using namespace kvq::math::detail;
  using mp = boost::multiprecision::number<boost::multiprecision::cpp_bin_float<200>>;
  const mp ln2 = log(mp(2));
  const mp pi = boost::math::constants::pi<mp>();
  auto dd_ok = [](double hi, double lo, const mp& v) {
    return static_cast<double>(v) == hi && static_cast<double>(v - mp(hi)) == lo;
  };
  CHECK(dd_ok(ln2_hi, ln2_lo, ln2));
  CHECK(dd_ok(inv_ln2_hi, inv_ln2_lo, 1 / ln2));
  CHECK(dd_ok(pio2_hi, pio2_lo, pi / 2));
  CHECK(dd_ok(twopi_hi, twopi_lo, 2 * pi));
  // the 32-bit head of ln2 is ln2 truncated to 32 bits; the tail the rounded rest
  CHECK(mp(ln2_head) == floor(ldexp(ln2, 32)) / mp(4294967296.0));
  CHECK(static_cast<double>(ln2 - mp(ln2_head)) == ln2_tail);
  // 256 bits of 2/pi after the padding words
  mp r = 2 / pi;
  for (int w = 2; w < 10; ++w) {
    r *= mp(4294967296.0);
    const mp fl = floor(r);
    CHECK(static_cast<std::uint32_t>(fl) == two_over_pi_word(w));
    r -= fl;
  }
  CHECK(two_over_pi_word(0) == 0u);
  CHECK(two_over_pi_word(1) == 0u);
}

TEST_CASE("float functions: special values", "[math][quick]") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float den = std::numeric_limits<float>::denorm_min();
  CHECK(km::exp(0.0f) == 1.0f);
  CHECK(km::exp(-0.0f) == 1.0f);
  CHECK(km::exp(inf) == inf);
  CHECK(km::exp(-inf) == 0.0f);
  CHECK(!std::signbit(km::exp(-inf)));
  CHECK(std::isnan(km::exp(nan)));
  CHECK(km::exp(89.0f) == inf);
  CHECK(km::exp(-104.0f) == 0.0f);
  CHECK(km::exp(-103.0f) > 0.0f);  // subnormal result
  CHECK(km::exp(den) == 1.0f);
  CHECK(km::exp2(128.0f) == inf);
  CHECK(km::exp2(-149.0f) == den);
  CHECK(km::exp2(-150.0f) == 0.0f);  // tie 2^-150 rounds to even (0)
  CHECK(km::exp2(-149.5f) == den);
  CHECK(km::exp2(10.0f) == 1024.0f);
  CHECK(km::exp2(-inf) == 0.0f);
  CHECK(std::isnan(km::exp2(nan)));
  CHECK(km::log(1.0f) == 0.0f);
  CHECK(!std::signbit(km::log(1.0f)));
  CHECK(km::log(0.0f) == -inf);
  CHECK(km::log(-0.0f) == -inf);
  CHECK(std::isnan(km::log(-1.0f)));
  CHECK(std::isnan(km::log(-inf)));
  CHECK(km::log(inf) == inf);
  CHECK(std::isnan(km::log(nan)));
  CHECK(km::log2(den) == -149.0f);
  CHECK(km::log2(1024.0f) == 10.0f);
  CHECK(km::log2(0.5f) == -1.0f);
  CHECK(km::log2(std::numeric_limits<float>::max()) == 128.0f);  // correctly rounded
  CHECK(km::log(den) == kvqtest::correctly_rounded(fn::log, den));
  CHECK(km::sin(0.0f) == 0.0f);
  CHECK(!std::signbit(km::sin(0.0f)));
  CHECK(std::signbit(km::sin(-0.0f)));
  CHECK(km::cos(0.0f) == 1.0f);
  CHECK(km::cos(-0.0f) == 1.0f);
  CHECK(std::isnan(km::sin(inf)));
  CHECK(std::isnan(km::cos(-inf)));
  CHECK(std::isnan(km::sin(nan)));
  CHECK(km::sin(den) == den);
  CHECK(km::sin(-den) == -den);
  CHECK(km::cos(den) == 1.0f);
}

TEST_CASE("double functions: special values", "[math][quick]") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double den = std::numeric_limits<double>::denorm_min();
  CHECK(km::exp(0.0) == 1.0);
  CHECK(km::exp(inf) == inf);
  CHECK(km::exp(-inf) == 0.0);
  CHECK(std::isnan(km::exp(nan)));
  CHECK(km::exp(709.7) < inf);
  CHECK(km::exp(709.79) == inf);
  CHECK(km::exp(-745.2) == 0.0);
  CHECK(km::exp(-745.0) == den);
  CHECK(km::exp2(-1074.0) == den);
  CHECK(km::exp2(-1075.0) == 0.0);
  CHECK(km::exp2(1023.0) == std::ldexp(1.0, 1023));
  CHECK(km::exp2(1024.0) == inf);
  CHECK(km::log(1.0) == 0.0);
  CHECK(km::log(0.0) == -inf);
  CHECK(std::isnan(km::log(-2.0)));
  CHECK(km::log(inf) == inf);
  CHECK(km::log2(den) == -1074.0);
  CHECK(km::log2(std::ldexp(1.0, 1000)) == 1000.0);
  for (int k = -1074; k <= 1023; ++k) {
    REQUIRE(km::log2(std::ldexp(1.0, k)) == static_cast<double>(k));
    REQUIRE(km::exp2(static_cast<double>(k)) == std::ldexp(1.0, k));
  }
}

TEST_CASE("float functions: strided sweep within 1 ulp of the correctly rounded result", "[math][quick]") {
  constexpr std::uint32_t stride = 40009;  // prime: visits all exponents and many mantissas
  struct range {
    fn f;
    std::uint32_t lo, hi;
  };
  const range ranges[] = {
      {fn::exp, 0x00000000u, 0x42b20000u},   // [0, 89]
      {fn::exp, 0x80000000u, 0xc2d00000u},   // [-104, -0]
      {fn::exp2, 0x00000000u, 0x43000000u},  // [0, 128]
      {fn::exp2, 0x80000000u, 0xc3160000u},  // [-150, -0]
      {fn::log, 0x00000001u, 0x7f7fffffu},   // all positive finite
      {fn::log2, 0x00000001u, 0x7f7fffffu},
      {fn::sin, 0x00000000u, 0x7f7fffffu},   // all finite (both signs)
      {fn::sin, 0x80000000u, 0xff7fffffu},
      {fn::cos, 0x00000000u, 0x7f7fffffu},
      {fn::cos, 0x80000000u, 0xff7fffffu},
  };
  for (const auto& rg : ranges) {
    const auto r = sweep(rg.f, rg.lo, rg.hi, stride);
    INFO(kvqtest::fn_name(rg.f) << " range " << std::hex << rg.lo << ".." << rg.hi << std::dec << ": "
                                << r.checked << " inputs, " << r.one_ulp << " not correctly rounded, "
                                << r.bad << " beyond 1 ulp. " << r.first_bad);
    CHECK(r.bad == 0);
    CHECK(r.checked > 10000);
  }
}

TEST_CASE("float functions: dense sweeps where the algorithms switch paths", "[math][quick]") {
  // Around the pi/4 switch of sin/cos, multiples of pi/2, the exp overflow and underflow
  // thresholds and around 1 for log.
  const float centers[] = {0.785398163f, 1.57079633f, 3.14159265f, 4.71238898f, 100.530965f, 88.7228394f,
                           -87.3365479f, -103.278931f, 1.0f,         0.5f,        2.0f,        1.41421354f};
  const fn fns[] = {fn::exp, fn::exp2, fn::log, fn::log2, fn::sin, fn::cos};
  for (float c : centers) {
    for (fn f : fns) {
      if ((f == fn::log || f == fn::log2) && c <= 0.0f) continue;
      std::uint32_t u = kvqtest::fbits(c);
      const auto r = sweep(f, u - 2000u, u + 2000u, 1);
      INFO(kvqtest::fn_name(f) << " near " << c << ": " << r.first_bad);
      CHECK(r.bad == 0);
    }
  }
}

TEST_CASE("double functions are within 1 ulp on random inputs", "[math][quick]") {
  std::mt19937_64 gen(12345);
  auto ulp_error = [](double got, const mp50& exact) {
    // error in units of the spacing of doubles at the exact value
    int e;
    std::frexp(static_cast<double>(exact), &e);
    const mp50 ulp = ldexp(mp50(1), std::max(e - 53, -1074));
    return static_cast<double>(abs(mp50(got) - exact) / ulp);
  };
  double worst[4] = {0, 0, 0, 0};
  const int n = 20000;
  for (int i = 0; i < n; ++i) {
    // exp: uniform in [-745, 709.7]; exp2: [-1074, 1023.9]; log/log2: random bit patterns
    const double xe = std::uniform_real_distribution<double>(-745.0, 709.7)(gen);
    const double x2 = std::uniform_real_distribution<double>(-1074.0, 1023.9)(gen);
    double xl;
    do {
      xl = kvqtest::dbits(0.0) == 0 ? 0.0 : 0.0;
      std::uint64_t u = gen() & 0x7fffffffffffffffULL;
      std::memcpy(&xl, &u, 8);
    } while (!std::isfinite(xl) || xl == 0.0);
    const double small = std::uniform_real_distribution<double>(-0.5, 0.5)(gen);
    const mp50 me = exp(mp50(xe));
    worst[0] = std::max(worst[0], ulp_error(km::exp(xe), me));
    worst[0] = std::max(worst[0], ulp_error(km::exp(small), exp(mp50(small))));
    worst[1] = std::max(worst[1], ulp_error(km::exp2(x2), exp(mp50(x2) * log(mp50(2)))));
    worst[2] = std::max(worst[2], ulp_error(km::log(xl), log(mp50(xl))));
    const double near1 = 1.0 + small * 1e-3;
    worst[2] = std::max(worst[2], ulp_error(km::log(near1), log(mp50(near1))));
    worst[3] = std::max(worst[3], ulp_error(km::log2(xl), log(mp50(xl)) / log(mp50(2))));
    worst[3] = std::max(worst[3], ulp_error(km::log2(near1), log(mp50(near1)) / log(mp50(2))));
  }
  INFO("worst ulp errors: exp " << worst[0] << ", exp2 " << worst[1] << ", log " << worst[2] << ", log2 "
                                << worst[3]);
  CHECK(worst[0] < 1.0);
  CHECK(worst[1] < 1.0);
  CHECK(worst[2] < 1.0);
  CHECK(worst[3] < 1.0);
}

TEST_CASE("sincos_turns matches sin/cos of 2 pi t", "[math][quick]") {
  std::mt19937_64 gen(99);
  double worst = 0;
  const mp50 twopi = 2 * boost::math::constants::pi<mp50>();
  for (int i = 0; i < 20000; ++i) {
    const double t = static_cast<double>(gen() >> 11) * 0x1p-53;
    double s, c;
    km::sincos_turns(t, s, c);
    const mp50 a = twopi * mp50(t);
    const mp50 es = sin(a), ec = cos(a);
    // absolute error relative to 2^-53 (the functions are bounded by 1)
    worst = std::max(worst, static_cast<double>(abs(mp50(s) - es) * mp50(0x1p53)));
    worst = std::max(worst, static_cast<double>(abs(mp50(c) - ec) * mp50(0x1p53)));
  }
  INFO("worst absolute error in units of 2^-53: " << worst);
  CHECK(worst <= 1.0);
  double s, c;
  km::sincos_turns(0.25, s, c);
  CHECK(s == 1.0);
  CHECK(c == 0.0);
  km::sincos_turns(0.0, s, c);
  CHECK(s == 0.0);
  CHECK(c == 1.0);
}
