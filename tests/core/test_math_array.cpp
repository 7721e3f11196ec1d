// math::exp_n must give math::exp's bits for every element; the oracle of math::exp itself
// is test_math (Boost.Multiprecision). Here: the rewritten steps (Dekker's product for the
// ln2 tail, 2^k from the shifter's bits) for every k the fast range reaches, and exp_n
// against the scalar function over every edge class and a dense sweep of the fast range.
// log_n against the scalar math::log over the same kinds of inputs.
// sincos_n against the scalar math::sincos (whose oracle is test_math and the exhaustive
// sweep) in both kernel copies.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <kvq/core/math_array.hpp>

#include "isa_copies.hpp"

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

// log_n against the scalar math::log: every edge class (NaN, infinities, zeros, negatives,
// subnormals, the normal range's ends), mantissas at and around the sqrt(2) switch and 1
// (k = 0 and f near 0: the Dekker product's smallest operands), powers of two, random bit
// patterns over every binade, the study's ratios of probabilities, groups with one lane
// off the fast path, every alignment and in place.
TEST_CASE("log_n gives math::log's bits for every element", "[math][quick]") {
  using lim = std::numeric_limits<double>;
  std::vector<double> x;
  double nan2;
  const std::uint64_t pay = 0x7ff8000000000456ull;
  std::memcpy(&nan2, &pay, 8);
  for (double v : {lim::quiet_NaN(), nan2, lim::infinity(), -lim::infinity(), 0.0, -0.0, -1.0, -lim::min(),
                   lim::denorm_min(), lim::min(), std::nextafter(lim::min(), 0.0), std::nextafter(lim::min(), 1.0),
                   lim::max(), 1.0, std::nextafter(1.0, 2.0), std::nextafter(1.0, 0.0), 2.0, 0.5, 1.4142135623730951,
                   std::nextafter(1.4142135623730951, 2.0), std::nextafter(1.4142135623730951, 0.0),
                   0.70710678118654757, std::nextafter(0.70710678118654757, 0.0), 1e-300, 3e-320})
    x.push_back(v);
  for (int e = -1074; e <= 1023; ++e) x.push_back(std::ldexp(1.0, e));
  std::mt19937_64 gen(17);
  for (int i = 0; i < 200000; ++i) {
    double v;
    const std::uint64_t u = gen() & 0x7fffffffffffffffull;  // positive: every binade, NaN and inf included
    std::memcpy(&v, &u, 8);
    x.push_back(v);
  }
  for (int i = 0; i < 100000; ++i) x.push_back(std::uniform_real_distribution<double>(0.5, 2.0)(gen));
  for (int i = 0; i < 20000; ++i) x.push_back(1.0 + std::ldexp(std::uniform_real_distribution<double>(-1, 1)(gen), -(int)(gen() % 52)));
  for (int i = 0; i < 64; ++i) x.push_back(i % 5 == 2 ? 0.0 : 1.0 + i);
  for (std::size_t off = 0; off < 4; ++off) {
    const std::size_t n = x.size() - off;
    std::vector<double> y(x.begin() + static_cast<std::ptrdiff_t>(off), x.end());
    kvq::math::log_n(y.data(), y.data(), n);  // in place
    std::size_t bad = 0;
    double first_bad = 0.0;
    for (std::size_t i = 0; i < n; ++i) {
      const double r = kvq::math::log(x[off + i]);
      const bool same = bits64(y[i]) == bits64(r) || (std::isnan(y[i]) && std::isnan(r));
      if (!same && bad++ == 0) first_bad = x[off + i];
    }
    INFO("offset " << off << ": " << bad << " of " << n << " differ, the first at x = " << first_bad);
    REQUIRE(bad == 0);
  }
}

TEST_CASE("sincos_n gives math::sincos's bits for every element, in both kernel copies", "[math][quick]") {
  std::vector<float> x;
  const float inf = std::numeric_limits<float>::infinity();
  // edges: specials, zeros, subnormals, both sides of float(pi/4) (no reduction at or
  // below it), the quadrant boundaries, the largest floats (the last table windows)
  for (float v : {0.0f, -0.0f, inf, -inf, std::numeric_limits<float>::quiet_NaN(),
                  std::numeric_limits<float>::denorm_min(), -std::numeric_limits<float>::denorm_min(),
                  std::numeric_limits<float>::min(), std::numeric_limits<float>::max(),
                  -std::numeric_limits<float>::max(), 0.785398163397448309615f, 1.5707964f, 3.1415927f, 4.712389f,
                  6.2831855f, 1e20f, 1e38f, -1e-30f})
    for (int d = -3; d <= 3; ++d) {
      float y = v;
      for (int k = 0; k < (d < 0 ? -d : d); ++k) y = std::nextafter(y, d < 0 ? -inf : inf);
      x.push_back(y);
    }
  // every bit pattern at a prime stride (every exponent, both signs, NaN payloads)
  for (std::uint64_t u = 0; u < (1ull << 32); u += 4099) {
    float v;
    const std::uint32_t w = static_cast<std::uint32_t>(u);
    std::memcpy(&v, &w, 4);
    x.push_back(v);
  }
  // RoPE's angles: float(position) * inv_freq for 16k positions, head dimension 128
  for (std::size_t pos = 0; pos < 16384; pos += 7)
    for (int i = 0; i < 64; ++i)
      x.push_back(static_cast<float>(pos) * static_cast<float>(std::pow(10000.0, -i / 64.0)));
  // near multiples of pi/2 (fractions close to 1/2 and to 0)
  for (int k = 1; k < 100000; k += 37) {
    const float v = static_cast<float>(k * 1.5707963267948966);
    for (float y : {std::nextafter(v, 0.0f), v, std::nextafter(v, inf)}) x.push_back(y);
  }
  kvq_test::for_each_isa([&](kvq::isa copy) {
    for (std::size_t off = 0; off < 8; off += 3) {  // group alignments and tails
      const std::size_t n = x.size() - off;
      std::vector<float> s(n), c(n);
      kvq::math::sincos_n(x.data() + off, s.data(), c.data(), n);
      std::size_t bad = 0;
      float first_bad = 0.0f;
      for (std::size_t i = 0; i < n; ++i) {
        float ws = 0.0f, wc = 0.0f;
        kvq::math::sincos(x[off + i], ws, wc);
        if ((bits32(s[i]) != bits32(ws) || bits32(c[i]) != bits32(wc)) && bad++ == 0) first_bad = x[off + i];
      }
      INFO("copy " << kvq::isa_name(copy) << ", offset " << off << ": " << bad << " of " << n
                   << " differ, the first at x = " << first_bad);
      REQUIRE(bad == 0);
    }
    // in place (s aliasing x)
    std::vector<float> y(x.begin(), x.begin() + 1000), c(1000);
    kvq::math::sincos_n(y.data(), y.data(), c.data(), y.size());
    for (std::size_t i = 0; i < y.size(); ++i) {
      float ws = 0.0f, wc = 0.0f;
      kvq::math::sincos(x[i], ws, wc);
      REQUIRE(bits32(y[i]) == bits32(ws));
    }
  });
}

TEST_CASE("sincos_group_fast writes sincos_group_finite's floats or refuses the group", "[math][quick]") {
  using kvq::math::detail::sincos_group_fast;
  using kvq::math::detail::sincos_group_finite;
  constexpr int L = kvq::math::detail::sincos_lanes;
  std::size_t taken = 0, refused = 0, bad = 0;
  float first_bad = 0.0f;
  auto check = [&](const float* g) {
    float fs[L], fc[L], es[L], ec[L];
    for (int j = 0; j < L; ++j) fs[j] = fc[j] = -7.0f;  // a refusal writes nothing
    const bool ok = sincos_group_fast(g, fs, fc);
    sincos_group_finite(g, es, ec);
    if (!ok) {
      ++refused;
      for (int j = 0; j < L; ++j)
        if ((fs[j] != -7.0f || fc[j] != -7.0f) && bad++ == 0) first_bad = g[j];
      return;
    }
    ++taken;
    for (int j = 0; j < L; ++j)
      if ((bits32(fs[j]) != bits32(es[j]) || bits32(fc[j]) != bits32(ec[j])) && bad++ == 0) first_bad = g[j];
  };
  std::vector<float> g(L);
  // RoPE's angles, every position below 2^17 and every pair of head dimension 128 (base
  // 1e4 and 5e5), in the groups apply_rope makes
  for (double base : {1e4, 5e5})
    for (std::size_t pos = 0; pos < (std::size_t{1} << 17); ++pos)
      for (int i = 0; i < 64; i += L) {
        for (int j = 0; j < L; ++j)
          g[j] = static_cast<float>(pos) * static_cast<float>(1.0 / std::pow(base, (2.0 * (i + j)) / 128.0));
        check(g.data());
      }
  // every positive float below 2^20 at a prime stride, and their negatives, in runs of L
  for (std::uint32_t u = 1; u + L * 613u < 0x49800000u; u += L * 613u * 13u)
    for (float sign : {1.0f, -1.0f}) {
      for (int j = 0; j < L; ++j) {
        float v;
        const std::uint32_t w = u + static_cast<std::uint32_t>(j) * 613u;
        std::memcpy(&v, &w, 4);
        g[j] = sign * v;
      }
      check(g.data());
    }
  INFO(taken << " groups taken, " << refused << " refused; " << bad << " wrong, the first at x = " << first_bad);
  REQUIRE(bad == 0);
  REQUIRE(taken > 50 * refused);  // the short road is the common one
  // the 32-lane groups of the x86-64-v3 copy on AVX-512, over the same RoPE angles
  constexpr int W = 32;
  std::size_t wide_taken = 0, wide_bad = 0;
  for (std::size_t pos = 0; pos < (std::size_t{1} << 15); ++pos)
    for (int i0 = 0; i0 < 64; i0 += W) {
      float in[W], fs[W], fc[W], es[W], ec[W];
      for (int j = 0; j < W; ++j)
        in[j] = static_cast<float>(pos) * static_cast<float>(1.0 / std::pow(1e4, (2.0 * (i0 + j)) / 128.0));
      if (!sincos_group_fast<W>(in, fs, fc)) continue;
      ++wide_taken;
      for (int j = 0; j < W; j += L) sincos_group_finite(in + j, es + j, ec + j);
      for (int j = 0; j < W; ++j) wide_bad += (bits32(fs[j]) != bits32(es[j]) || bits32(fc[j]) != bits32(ec[j])) ? 1 : 0;
    }
  INFO(wide_taken << " wide groups taken");
  REQUIRE(wide_bad == 0);
  REQUIRE(wide_taken > 60000);  // of 65536
  // groups it must refuse: a zero (the sine keeps the sign of x), |x| >= 2^20 (Cody-Waite's
  // products stop being exact), sin x = -8.7e-8 at float(pi) (the reduction's 2^-53 is
  // 2^-29 of it)
  const float near_pi = 3.14159274f;
  for (float v : {0.0f, -0.0f, 1048576.0f, -3.0e6f, near_pi}) {
    for (int j = 0; j < L; ++j) g[j] = 0.5f + 0.125f * static_cast<float>(j);
    g[3] = v;
    float fs[L], fc[L];
    INFO("x = " << v);
    CHECK_FALSE(sincos_group_fast(g.data(), fs, fc));
  }
}
