// kvq::encode_stochastic: the documented rule is "round away from zero iff
// frac32 + random_bits >= 2^32", frac32 = the discarded fraction of a quantum as
// 32-bit fixed point, truncated. The tests compute frac32 themselves from the two
// neighbouring table values (oracle.hpp) in exact double arithmetic and check:
//  - the result is always one of the two neighbours (toward zero / away from zero);
//  - the switch happens exactly at random_bits = 2^32 - frac32;
//  - random_bits = 0 gives toward_zero (inputs beyond the largest finite value
//    follow the overflow policy as nearest rounding does);
//  - over many random bits the round-away frequency matches the fraction.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <kvq/format.hpp>

#include "formats_under_test.hpp"
#include "sweep.hpp"

using namespace kvqtest;

namespace {

constexpr double two32 = 4294967296.0;

// The two candidates and the exact truncated fraction for a finite non-NaN input.
struct bracket {
  unsigned toward;       // code toward zero
  unsigned away;         // code away from zero (overflow policy applied)
  std::uint64_t frac32;  // floor(fraction * 2^32)
  bool exact;            // the input is a format value (or clamps to one: ue8m0)
};

template <class X>
bracket bracket_of(const table& T, X x, ovf o) {
  const bool neg = T.L.is_signed && std::signbit(x);
  const double a = std::fabs(static_cast<double>(x));
  const long i = T.find(a);
  bracket b{};
  if (i < 0 || a >= T.next_above_max) {
    // Below ue8m0's smallest value (no zero: both directions give code 0), or at or
    // beyond max + ulp(max), where even the truncated result overflows: the result is
    // fixed, the same as nearest rounding's.
    b.toward = b.away = T.select(i, a, neg, rmode::nearest_even, o);
    b.frac32 = 0;
    b.exact = true;
    return b;
  }
  // Toward zero, and away from zero: between max and max + ulp(max) "away" is an
  // overflow, resolved by the overflow policy (select does that for directed modes).
  b.toward = T.select(i, a, neg, rmode::toward_zero, o);
  b.away = T.select(i, a, neg, neg ? rmode::down : rmode::up, o);
  const std::size_t k = static_cast<std::size_t>(i);
  const double lo = T.v[k];
  const double hi = k + 1 < T.v.size() ? T.v[k + 1] : T.next_above_max;
  // a - lo is exact (lo == 0, or lo <= a < hi <= 2 lo: Sterbenz), hi - lo is a power of
  // two, so the scaled fraction is exact and floor() truncates it exactly.
  b.frac32 = static_cast<std::uint64_t>(std::floor((a - lo) / (hi - lo) * two32));
  b.exact = a == lo;
  return b;
}

std::vector<std::uint32_t> bit_probes(std::uint64_t frac32) {
  std::vector<std::uint32_t> r = {0u, 1u, 0x7FFFFFFFu, 0x80000000u, 0xFFFFFFFEu, 0xFFFFFFFFu};
  if (frac32 > 0) {
    const std::uint64_t t = (1ull << 32) - frac32;  // first random_bits that rounds away
    r.push_back(static_cast<std::uint32_t>(t));
    r.push_back(static_cast<std::uint32_t>(t - 1));
    if (t + 1 < (1ull << 32)) r.push_back(static_cast<std::uint32_t>(t + 1));
  }
  return r;
}

template <class F, class X>
void check_input(const table& T, X x, ovf o, mismatch_log& log) {
  const bracket b = bracket_of(T, x, o);
  for (std::uint32_t rb : bit_probes(b.frac32)) {
    const bool away = b.frac32 + rb >= (1ull << 32);
    const unsigned want = b.exact ? b.toward : (away ? b.away : b.toward);
    const unsigned got = kvq::encode_stochastic<F>(x, rb, to_kvq(o));
    ++log.checked;
    if (got != want) {
      log.add(bits_of(x), want, got, -1, "");
      if (log.first.size() <= mismatch_log::keep && log.first.back().input == bits_of(x)) {
        log.first.back().what = std::string("random_bits ") + hex(rb, 8) + " frac32 " + hex(b.frac32, 8) + " " +
                                name_of(o) + (sizeof(X) == 4 ? " float" : " double");
      }
    }
  }
}

template <class F>
std::vector<double> tiny_and_edge_doubles(const table& T) {
  // Far below the smallest quantum the truncated fraction is 0 or a handful of units:
  // the rule must hold there too.
  std::vector<double> v;
  const double q0 = T.v[0] == 0.0 ? T.v[1] : T.v[0];
  for (int k = 1; k <= 80; ++k) {
    v.push_back(std::ldexp(q0, -k));
    v.push_back(std::ldexp(q0, -k) * 1.375);
  }
  v.push_back(std::numeric_limits<double>::denorm_min());
  v.push_back(std::ldexp(1.0, -600));
  for (std::size_t k = 0; k + 1 < T.v.size(); ++k) {
    const double lo = T.v[k], hi = T.v[k + 1];
    v.push_back(lo + (hi - lo) * 0.25);
    v.push_back(std::nextafter(hi, 0.0));
    v.push_back(std::nextafter(lo, 1e300));
  }
  v.push_back(T.v.back() + (T.next_above_max - T.v.back()) * 0.5);
  v.push_back(T.next_above_max * 4);
  const std::size_t n = v.size();
  for (std::size_t i = 0; i < n; ++i) v.push_back(-v[i]);
  return v;
}

}  // namespace

TEST_CASE("stochastic rounding: always a neighbour, switching exactly at 2^32 - frac32", "[stochastic]") {
  for_each_format([](auto f) {
    using F = decltype(f);
    const table T(ref<F>::L);
    mismatch_log floats, doubles;
    for (ovf o : all_ovfs) {
      // Floats across every binade (every 65521st bit pattern), excluding NaN/Inf.
      for (std::uint64_t u = 0; u < (1ull << 32); u += 65521) {
        const float x = float_from_bits(static_cast<std::uint32_t>(u));
        if (std::isfinite(x)) check_input<F>(T, x, o, floats);
      }
      for (double x : tiny_and_edge_doubles<F>(T)) {
        check_input<F>(T, x, o, doubles);
        const float xf = static_cast<float>(x);
        if (std::isfinite(xf)) check_input<F>(T, xf, o, floats);
      }
    }
    {
      INFO(T.L.name << " float inputs: " << floats.report(8));
      CHECK(floats.count == 0);
    }
    {
      INFO(T.L.name << " double inputs: " << doubles.report(16));
      CHECK(doubles.count == 0);
    }
  });
}

TEST_CASE("stochastic rounding with random_bits = 0 is toward_zero", "[stochastic]") {
  for_each_format([](auto f) {
    using F = decltype(f);
    const table T(ref<F>::L);
    mismatch_log log;
    for (std::uint64_t u = 0; u < (1ull << 32); u += 16411) {
      const float x = float_from_bits(static_cast<std::uint32_t>(u));
      if (std::isnan(x)) continue;
      for (ovf o : all_ovfs) {
        // At or beyond max + ulp(max), toward_zero would stay finite, but stochastic
        // rounding follows the overflow policy of nearest rounding there (documented).
        const bool beyond = std::fabs(static_cast<double>(x)) >= T.next_above_max;
        const unsigned want = beyond ? T.encode(x, rmode::nearest_even, o) : T.encode(x, rmode::toward_zero, o);
        const unsigned got = kvq::encode_stochastic<F>(x, 0u, to_kvq(o));
        ++log.checked;
        if (got != want) log.add(u, want, got, -1, name_of(o));
      }
    }
    INFO(T.L.name << ": " << log.report(8));
    CHECK(log.count == 0);
  });
}

TEST_CASE("stochastic rounding: special inputs follow the edge policy", "[stochastic]") {
  for_each_format([](auto f) {
    using F = decltype(f);
    const table T(ref<F>::L);
    const float inf = std::numeric_limits<float>::infinity();
    for (std::uint32_t rb : {0u, 0x80000000u, 0xFFFFFFFFu}) {
      for (ovf o : all_ovfs) {
        INFO(T.L.name << " random_bits=" << hex(rb, 8) << " " << name_of(o));
        CHECK(kvq::encode_stochastic<F>(std::numeric_limits<float>::quiet_NaN(), rb, to_kvq(o)) == T.nan_for_float());
        CHECK(kvq::encode_stochastic<F>(inf, rb, to_kvq(o)) == T.encode(inf, rmode::nearest_even, o));
        CHECK(kvq::encode_stochastic<F>(-inf, rb, to_kvq(o)) == T.encode(-inf, rmode::nearest_even, o));
        CHECK(kvq::encode_stochastic<F>(0.0f, rb, to_kvq(o)) == T.encode(0.0f, rmode::nearest_even, o));
        CHECK(kvq::encode_stochastic<F>(-0.0f, rb, to_kvq(o)) == T.encode(-0.0f, rmode::nearest_even, o));
      }
    }
  });
}

TEST_CASE("stochastic rounding: round-away frequency matches the fraction", "[stochastic]") {
  for_each_format([](auto f) {
    using F = decltype(f);
    const table T(ref<F>::L);
    std::mt19937 rng(20240229u);
    // Inputs at known fractions of the interval above a few table values.
    for (std::size_t k : {std::size_t{1}, T.v.size() / 3, T.v.size() / 2, T.v.size() - 2}) {
      const double lo = T.v[k], hi = T.v[k + 1];
      for (double p : {0.1, 0.3, 0.5, 0.7, 0.9}) {
        const double x = lo + (hi - lo) * p;  // near fraction p; the exact fraction is computed below
        const bracket b = bracket_of(T, x, ovf::satfinite);
        const double frac = static_cast<double>(b.frac32) / two32;
        // (1) Stratified, exact: random_bits = j * 2^20, j = 0..4095. Away iff
        //     j >= ceil((2^32 - frac32) / 2^20).
        unsigned away = 0;
        for (std::uint32_t j = 0; j < 4096; ++j)
          away += kvq::encode_stochastic<F>(x, j << 20) == b.away ? 1u : 0u;
        const std::uint64_t first = ((1ull << 32) - b.frac32 + (1ull << 20) - 1) >> 20;
        INFO(T.L.name << " x=" << x << " fraction " << frac);
        CHECK(away == 4096 - first);
        // (2) Uniform random bits: the frequency is within 5 sigma of the fraction.
        const int n = 40000;
        int ups = 0;
        for (int i = 0; i < n; ++i) ups += kvq::encode_stochastic<F>(x, static_cast<std::uint32_t>(rng())) == b.away;
        const double sigma = std::sqrt(frac * (1 - frac) / n);
        CHECK(std::fabs(static_cast<double>(ups) / n - frac) <= 5 * sigma + 1e-9);
        CHECK(std::fabs(frac - p) < 1e-6);
      }
    }
  });
}
