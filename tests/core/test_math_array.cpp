// math::exp_n must give math::exp's bits for every element; the oracle of math::exp itself
// is test_math (Boost.Multiprecision). Here: the rewritten steps (Dekker's product for the
// ln2 tail, 2^k from the shifter's bits) for every k the fast range reaches, and exp_n
// against the scalar function over every edge class and a dense sweep of the fast range.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <kvq/core/math_array.hpp>

namespace {
std::uint64_t bits64(double x) {
  std::uint64_t u;
  std::memcpy(&u, &x, 8);
  return u;
}
std::uint32_t bits32(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
}  // namespace

TEST_CASE("the split ln2 tail and Dekker's product equal the fma error term for every k", "[math][quick]") {
  using namespace kvq::math::detail;
  REQUIRE(exp_tail_hi + exp_tail_lo == ln2_tail);
  REQUIRE(ln2_tail - exp_tail_hi == exp_tail_lo);  // the split is exact
  for (int k = -1100; k <= 1100; ++k) {
    const double kd = static_cast<double>(k);
    const double p = kd * ln2_tail;
    const double e = (kd * exp_tail_hi - p) + kd * exp_tail_lo;
    INFO("k = " << k);
    REQUIRE(bits64(e) == bits64(std::fma(kd, ln2_tail, -p)));
  }
}

TEST_CASE("exp_n gives math::exp's bits for every element (double and float)", "[math][quick]") {
  std::vector<double> x;
  // every edge class: NaN payloads, infinities, zeros, the ends of the fast range and of
  // the scalar one, subnormal and overflowing results
  const double nan1 = std::numeric_limits<double>::quiet_NaN();
  double nan2;
  const std::uint64_t pay = 0xfff8000000000123ull;
  std::memcpy(&nan2, &pay, 8);
  for (double v : {nan1, nan2, std::numeric_limits<double>::infinity(), -std::numeric_limits<double>::infinity(), 0.0,
                   -0.0, 690.0, -690.0, std::nextafter(690.0, 1000.0), std::nextafter(-690.0, -1000.0), 709.78, 709.79,
                   710.0, -745.1, -745.2, -746.0, -800.0, 1e-300, -1e-300, 88.0, 88.7, 89.0, -87.3, -103.9, -104.0})
    x.push_back(v);
  // a dense sweep of the fast range with random low bits, and ties of the k rounding
  std::mt19937_64 gen(7);
  for (int i = 0; i < 200000; ++i) x.push_back(std::uniform_real_distribution<double>(-700.0, 700.0)(gen));
  for (int k = -1000; k <= 1000; ++k) x.push_back((k + 0.5) * 0.6931471805599453);
  for (int i = 0; i < 20000; ++i) x.push_back(std::ldexp(std::uniform_real_distribution<double>(-1, 1)(gen), -(int)(gen() % 60)));
  // groups where a single lane leaves the fast range
  for (int i = 0; i < 64; ++i) x.push_back(i % 7 == 3 ? -1000.0 : -1.0 - i);
  for (std::size_t off = 0; off < 4; ++off) {  // every alignment of the groups, tails of 0..3
    const std::size_t n = x.size() - off;
    std::vector<double> y(n);
    kvq::math::exp_n(x.data() + off, y.data(), n);
    std::size_t bad = 0;
    double first_bad = 0.0;
    for (std::size_t i = 0; i < n; ++i)
      if (bits64(y[i]) != bits64(kvq::math::exp(x[off + i])) && bad++ == 0) first_bad = x[off + i];
    INFO("offset " << off << ": " << bad << " of " << n << " differ, the first at x = " << first_bad);
    REQUIRE(bad == 0);
  }
  // float: the widened argument, rounded once, over the same inputs and every float in
  // [-104, 89] at a stride (the softmax range and both ends of float's)
  std::vector<float> xf;
  for (double v : x) xf.push_back(static_cast<float>(v));
  for (float v = -104.0f; v < 89.0f; v = std::nextafter(v, 100.0f) + 0.000731f) xf.push_back(v);
  for (std::size_t off = 0; off < 4; ++off) {
    const std::size_t n = xf.size() - off;
    std::vector<float> y(xf.begin() + static_cast<std::ptrdiff_t>(off), xf.end());
    kvq::math::exp_n(y.data(), y.data(), n);  // in place
    std::size_t bad = 0;
    float first_bad = 0.0f;
    for (std::size_t i = 0; i < n; ++i)
      if (bits32(y[i]) != bits32(kvq::math::exp(xf[off + i])) && bad++ == 0) first_bad = xf[off + i];
    INFO("offset " << off << ": " << bad << " of " << n << " differ, the first at x = " << first_bad);
    REQUIRE(bad == 0);
  }
}
