// Distribution distances and output errors: hand-derived cases, long-double oracles,
// the accuracy of the metrics' own logarithm, and the non-finite conventions.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <kvq/core/reduce.hpp>
#include <kvq/metrics/distribution.hpp>
#include <kvq/metrics/output.hpp>

#include "oracle.hpp"

using namespace kvq::metrics;

namespace {
const double inf_d = std::numeric_limits<double>::infinity();
const double quiet_nan_d = std::numeric_limits<double>::quiet_NaN();

std::int64_t ordered(double x) {
  std::int64_t i;
  std::memcpy(&i, &x, sizeof i);
  return i < 0 ? std::numeric_limits<std::int64_t>::min() - i : i;
}
std::int64_t ulp_distance(double a, double b) {
  const std::int64_t d = ordered(a) - ordered(b);
  return d < 0 ? -d : d;
}
}  // namespace

TEST_CASE("the metrics' log (kvq::math::log): within 1 ulp, special values", "[metrics][math]") {
  using kvq::metrics::detail::log_d;
  std::mt19937_64 g(99);
  std::int64_t worst = 0;
  for (int i = 0; i < 200000; ++i) {
    // random positive finite doubles over the whole exponent range, subnormals included
    std::uint64_t u = g() & 0x7fffffffffffffffULL;
    double x;
    std::memcpy(&x, &u, sizeof x);
    if (!std::isfinite(x) || x == 0.0) continue;
    const double ref = static_cast<double>(std::log(static_cast<long double>(x)));
    worst = std::max(worst, ulp_distance(log_d(x), ref));
  }
  // and densely around 1, where the result is small
  for (int i = -20000; i <= 20000; ++i) {
    const double x = 1.0 + i * 1e-6;
    const double ref = static_cast<double>(std::log(static_cast<long double>(x)));
    worst = std::max(worst, ulp_distance(log_d(x), ref));
  }
  INFO("worst ulp error " << worst);
  CHECK(worst <= 1);
  CHECK(log_d(1.0) == 0.0);
  CHECK(log_d(0.0) == -inf_d);
  CHECK(std::isnan(log_d(-1.0)));
  CHECK(log_d(inf_d) == inf_d);
  CHECK(std::isnan(log_d(quiet_nan_d)));
}

TEST_CASE("KL, JS, TV: hand-derived cases", "[metrics][distribution]") {
  // p = (1/2, 1/2), q = (1/4, 3/4):
  //   KL = 1/2 ln 2 + 1/2 ln(2/3) = 1/2 ln(4/3)
  //   m = (3/8, 5/8): KL(p||m) = 1/2 ln(4/3) + 1/2 ln(4/5) = 1/2 ln(16/15)
  //                   KL(q||m) = 1/4 ln(2/3) + 3/4 ln(6/5)
  //   JS = 1/4 ln(16/15) + 1/8 ln(2/3) + 3/8 ln(6/5)
  //   TV = 1/2 (1/4 + 1/4) = 1/4
  std::vector<double> p{0.5, 0.5};
  std::vector<float> q{0.25f, 0.75f};
  const auto kl = kl_divergence(p, q);
  CHECK(kl.value == Approx(0.5 * std::log(4.0 / 3.0)).epsilon(1e-15));
  CHECK(kl.infinite_terms == 0);
  const double js = 0.25 * std::log(16.0 / 15.0) + 0.125 * std::log(2.0 / 3.0) + 0.375 * std::log(6.0 / 5.0);
  CHECK(js_divergence(p, q) == Approx(js).epsilon(1e-14));
  CHECK(total_variation(p, q) == 0.25);
  // Disjoint supports: JS = ln 2 (its maximum), TV = 1, KL = +inf with one infinite term.
  std::vector<double> a{1, 0}, b{0, 1};
  CHECK(js_divergence(a, b) == Approx(std::log(2.0)).epsilon(1e-15));
  CHECK(total_variation(a, b) == 1.0);
  const auto kab = kl_divergence(a, b);
  CHECK(kab.value == inf_d);
  CHECK(kab.infinite_terms == 1);
  CHECK(kab.finite_part == 0.0);
  // p_i = 0 terms vanish: p = (0, 1), q = (1/2, 1/2): KL = ln 2.
  CHECK(kl_divergence(std::vector<double>{0, 1}, std::vector<double>{0.5, 0.5}).value ==
        Approx(std::log(2.0)).epsilon(1e-15));
  // one underflowed key among others: p = (1/2, 1/2), q = (1, 0): finite part 1/2 ln(1/2)
  const auto k2 = kl_divergence(std::vector<double>{0.5, 0.5}, std::vector<double>{1, 0});
  CHECK(k2.value == inf_d);
  CHECK(k2.infinite_terms == 1);
  CHECK(k2.finite_part == Approx(0.5 * std::log(0.5)).epsilon(1e-15));
}

TEST_CASE("identical distributions: KL = JS = TV = 0 exactly", "[metrics][distribution]") {
  std::mt19937_64 g(5);
  const auto p = oracle::random_distribution(g, 4096, 3.0);
  CHECK(kl_divergence(p, p).value == 0.0);
  CHECK(js_divergence(p, p) == 0.0);
  CHECK(total_variation(p, p) == 0.0);
  CHECK(underflow(p, p).count == 0);
}

TEST_CASE("KL/JS/TV agree with long-double oracles on random distributions", "[metrics][distribution]") {
  std::mt19937_64 g(11);
  for (int rep = 0; rep < 50; ++rep) {
    const std::size_t n = 1 + g() % 5000;
    const auto p = oracle::random_distribution(g, n, 4.0);
    // q: p perturbed like a quantiser would, as float, with a few exact zeros
    std::vector<float> q(n);
    std::normal_distribution<double> eps(0.0, 0.05);
    for (std::size_t i = 0; i < n; ++i) q[i] = static_cast<float>(p[i] * (1.0 + eps(g)));
    for (std::size_t i = 0; i < n; i += 97) q[i] = 0.0f;
    long double kl = 0, klf = 0, js = 0, tv = 0;
    std::size_t inf_terms = 0, elig = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const long double a = p[i], b = q[i], m = (a + b) / 2;
      if (a > 0) ++elig;
      if (a > 0 && b == 0) ++inf_terms;
      if (a > 0 && b > 0) klf += a * std::log(a / b);
      if (a > 0) js += a * std::log(a / m) / 2;
      if (b > 0) js += b * std::log(b / m) / 2;
      tv += std::fabs(a - b) / 2;
    }
    kl = inf_terms > 0 ? inf_d : klf;
    const auto r = kl_divergence(p, q);
    CHECK(r.infinite_terms == inf_terms);
    if (inf_terms > 0)
      CHECK(r.value == inf_d);
    else
      CHECK(r.value == Approx(static_cast<double>(kl)).margin(1e-15).epsilon(1e-12));
    CHECK(r.finite_part == Approx(static_cast<double>(klf)).margin(1e-15).epsilon(1e-12));
    CHECK(js_divergence(p, q) == Approx(static_cast<double>(js)).margin(1e-15).epsilon(1e-12));
    CHECK(total_variation(p, q) == Approx(static_cast<double>(tv)).margin(1e-16).epsilon(1e-13));
    const auto u = underflow(p, q);
    CHECK(u.count == inf_terms);
    CHECK(u.eligible == elig);
  }
}

// The bits of the definition: every term a * log(a / b) (log(a) - log(b) where the ratio
// is not a finite normal number) by the scalar kvq::math::log, summed in kvq's fixed tree
// (kvq::reduce::tree_sum, itself checked against the documented shape in test_reduce).
// The library forms the terms a chunk at a time with math::log_n; lengths around the
// chunk and lane boundaries, zeros in either input, ratios that underflow or overflow.
TEST_CASE("KL and JS have the bits of their definition summed in the fixed tree", "[metrics][distribution]") {
  const auto log_ratio = [](double a, double b) {
    const double r = a / b;
    if (std::isfinite(r) && r >= std::numeric_limits<double>::min()) return kvq::math::log(r);
    return kvq::math::log(a) - kvq::math::log(b);
  };
  const auto bits = [](double x) {
    std::uint64_t u;
    std::memcpy(&u, &x, 8);
    return u;
  };
  std::mt19937_64 g(31);
  for (std::size_t n : {1, 3, 4, 5, 255, 256, 257, 511, 1000, 4099}) {
    const auto p = oracle::random_distribution(g, n, 4.0);
    std::vector<double> q(n);
    std::normal_distribution<double> eps(0.0, 0.05);
    for (std::size_t i = 0; i < n; ++i) q[i] = static_cast<float>(p[i] * (1.0 + eps(g)));
    std::vector<double> pz = p;
    for (std::size_t i = 0; i < n; i += 7) q[i] = 0.0;
    for (std::size_t i = 3; i < n; i += 11) pz[i] = 0.0;
    if (n > 5) {
      pz[1] = 1e-300, q[1] = 1e300;  // the ratio underflows
      pz[2] = 1e300, q[2] = 1e-300;  // ... and overflows
      pz[4] = 5e-324, q[4] = 0.5;    // a subnormal
    }
    std::vector<double> kl_terms(n), jp(n), jq(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double a = pz[i], b = q[i], m = (a + b) * 0.5;
      kl_terms[i] = (a == 0.0 || b == 0.0) ? 0.0 : a * log_ratio(a, b);
      jp[i] = a == 0.0 ? 0.0 : a * log_ratio(a, m);
      jq[i] = b == 0.0 ? 0.0 : b * log_ratio(b, m);
    }
    INFO("n = " << n);
    const auto r = kl_divergence(pz.data(), q.data(), n);
    CHECK(bits(r.finite_part) == bits(kvq::reduce::tree_sum(kl_terms.data(), n)));
    const double js = 0.5 * kvq::reduce::tree_sum(jp.data(), n) + 0.5 * kvq::reduce::tree_sum(jq.data(), n);
    CHECK(bits(js_divergence(pz.data(), q.data(), n)) == bits(js));
  }
}

TEST_CASE("distribution metrics: underflow fraction and bad input", "[metrics][distribution]") {
  // p = (.5 .3 .2 0), q = (.6 .4 0 0): key 2 underflows; key 3 is 0 in both and is not
  // eligible. count 1 of 3.
  const auto u = underflow(std::vector<double>{0.5, 0.3, 0.2, 0}, std::vector<double>{0.6, 0.4, 0, 0});
  CHECK(u.count == 1);
  CHECK(u.eligible == 3);
  CHECK(u.fraction == Approx(1.0 / 3.0).epsilon(1e-15));
  CHECK(underflow(std::vector<double>{0, 0}, std::vector<double>{0, 0}).fraction == 0.0);
  // NaN or negative entries: NaN, not a number averaged in later
  CHECK(std::isnan(kl_divergence(std::vector<double>{0.5, quiet_nan_d}, std::vector<double>{0.5, 0.5}).value));
  CHECK(std::isnan(js_divergence(std::vector<double>{0.5, 0.5}, std::vector<double>{-0.5, 1.5})));
  CHECK(std::isnan(total_variation(std::vector<double>{0.5, 0.5}, std::vector<double>{quiet_nan_d, 0.5})));
  CHECK_THROWS_AS(kl_divergence(std::vector<double>{1}, std::vector<double>{0.5, 0.5}), std::invalid_argument);
  // tiny masses: m = (a + b)/2 must not underflow to 0
  const double tiny = std::numeric_limits<double>::denorm_min();
  CHECK(js_divergence(std::vector<double>{tiny, 1.0}, std::vector<double>{tiny, 1.0}) == 0.0);
  // ratios that overflow use log a - log b
  const auto big = kl_divergence(std::vector<double>{1.0}, std::vector<double>{1e-320});
  CHECK(big.value == Approx(static_cast<double>(-std::log(static_cast<long double>(1e-320)))).epsilon(1e-14));
}

TEST_CASE("output metrics: hand-derived cases and non-finite outputs", "[metrics][output]") {
  // o = (1, 2, 2), ô = (1, 2, 3): |diff| sum 1, |o| sum 5 -> rel L1 = 0.2;
  // dot 11, |o| = 3, |ô| = sqrt 14 -> cosine 11 / (3 sqrt 14); RMSE = sqrt(1/3).
  const auto e = output_metrics(std::vector<double>{1, 2, 2}, std::vector<float>{1, 2, 3});
  CHECK(e.relative_l1 == Approx(0.2).epsilon(1e-15));
  CHECK(e.cosine == Approx(11.0 / (3.0 * std::sqrt(14.0))).epsilon(1e-15));
  CHECK(e.rmse == Approx(std::sqrt(1.0 / 3.0)).epsilon(1e-15));
  CHECK(e.nonfinite == 0);
  const auto same = output_metrics(std::vector<double>{1, -2, 3}, std::vector<double>{1, -2, 3});
  CHECK(same.relative_l1 == 0.0);
  CHECK(same.rmse == 0.0);
  CHECK(same.cosine == Approx(1.0).epsilon(1e-15));
  // an overflow that reached the output is counted
  const auto bad = output_metrics(std::vector<double>{1, 2}, std::vector<float>{std::numeric_limits<float>::infinity(), 2});
  CHECK(bad.nonfinite == 1);
  CHECK_FALSE(std::isfinite(bad.relative_l1));
  // zero reference: 0/0 -> NaN, x/0 -> inf; cosine with a zero vector -> NaN
  const auto z = output_metrics(std::vector<double>{0, 0}, std::vector<double>{0, 0});
  CHECK(std::isnan(z.relative_l1));
  CHECK(std::isnan(z.cosine));
  CHECK(output_metrics(std::vector<double>{0, 0}, std::vector<double>{1, 0}).relative_l1 == inf_d);
  CHECK_THROWS_AS(output_metrics(std::vector<double>{}, std::vector<double>{}), std::invalid_argument);
  CHECK_THROWS_AS(output_metrics(std::vector<double>{1}, std::vector<double>{1, 2}), std::invalid_argument);
}
