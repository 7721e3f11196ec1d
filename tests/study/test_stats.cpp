// kvq/study/stats.hpp's Student-t interval against Boost.Math (an independent
// implementation of the t distribution) and against hand arithmetic; its paired-difference
// interval against the published values of Newcombe (1998), and its sample size against
// Boost's normal quantiles and a simulation.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

#include <boost/math/distributions/normal.hpp>
#include <boost/math/distributions/students_t.hpp>

#include <kvq/study/stats.hpp>

using kvq::study::mean_ci;
using kvq::study::student_t975;

TEST_CASE("student_t975 against Boost.Math's quantile") {
  for (std::size_t nu = 1; nu <= 200; ++nu) {
    const double want = boost::math::quantile(boost::math::students_t(static_cast<double>(nu)), 0.975);
    const double tol = 1e-12;
    INFO("nu = " << nu << ", Boost " << want << ", kvq " << student_t975(nu));
    CHECK(std::fabs(student_t975(nu) - want) <= tol * want);
  }
  CHECK(std::isnan(student_t975(0)));
  // the central probability at a few points against Boost's cdf
  for (std::size_t nu : {1u, 2u, 3u, 4u, 7u, 30u})
    for (double t : {0.1, 1.0, 2.5, 10.0}) {
      const double want = 2.0 * boost::math::cdf(boost::math::students_t(static_cast<double>(nu)), t) - 1.0;
      CHECK(std::fabs(kvq::study::student_t_central(t, nu) - want) <= 1e-13);
    }
}

TEST_CASE("mean_ci by hand") {
  // values 1, 2, 3, 4, 5: mean 3, s = sqrt(2.5), half = t_{0.975,4} sqrt(2.5) / sqrt(5)
  const auto r = mean_ci({1, 2, 3, 4, 5});
  const double t4 = boost::math::quantile(boost::math::students_t(4.0), 0.975);
  const double half = t4 * std::sqrt(2.5) / std::sqrt(5.0);
  CHECK(r.mean == 3.0);
  CHECK(r.n == 5);
  CHECK(std::fabs(r.low - (3.0 - half)) <= 1e-12);
  CHECK(std::fabs(r.high - (3.0 + half)) <= 1e-12);
  // non-finite values are left out; constant values give a zero-width interval
  const double inf = std::numeric_limits<double>::infinity();
  const auto c = mean_ci({2, std::nan(""), 2, inf, 2});
  CHECK((c.mean == 2.0 && c.low == 2.0 && c.high == 2.0 && c.n == 3));
  const auto one = mean_ci({7});
  CHECK((one.mean == 7.0 && std::isnan(one.low) && one.n == 1));
  CHECK(std::isnan(mean_ci({}).mean));
}

// Newcombe's method 10 against the published values: Newcombe, Statistics in Medicine
// 17:2635-2650 (1998), Table III, the method-10 limits of its 13 example tables
// (e, f, g, h) = (both, first only, second only, neither), printed to 4 decimals. The
// tolerance is one unit of the last printed digit (the paper rounds its limits; one of
// them, 0.8736, is 0.873672 here).
TEST_CASE("newcombe_paired reproduces Newcombe 1998 Table III (method 10)") {
  struct row {
    std::size_t e, f, g, h;
    double low, high;
  };
  const row table[] = {
      {36, 12, 2, 0, 0.0569, 0.3404},  {20, 12, 2, 16, 0.0562, 0.3292}, {18, 12, 2, 18, 0.0562, 0.3290},
      {36, 14, 0, 0, 0.1528, 0.4167},  {35, 14, 0, 1, 0.1461, 0.4175},  {18, 14, 0, 18, 0.1441, 0.3963},
      {2, 97, 1, 0, 0.8721, 0.9854},   {1, 97, 1, 1, 0.8736, 0.9850},   {0, 29, 1, 0, 0.6666, 0.9882},
      {2, 98, 0, 0, 0.9178, 0.9945},   {1, 98, 0, 1, 0.9171, 0.9916},   {0, 30, 0, 0, 0.8395, 1.0},
      {54, 0, 0, 0, -0.0664, 0.0664},
  };
  for (const row& r : table) {
    const auto d = kvq::study::newcombe_paired(r.e, r.f, r.g, r.h);
    const double n = static_cast<double>(r.e + r.f + r.g + r.h);
    INFO("table " << r.e << " " << r.f << " " << r.g << " " << r.h << ": " << d.low << " to " << d.high);
    CHECK(d.diff == (static_cast<double>(r.f) - static_cast<double>(r.g)) / n);
    CHECK(std::fabs(d.low - r.low) <= 1e-4);
    CHECK(std::fabs(d.high - r.high) <= 1e-4);
  }
  // Swapping the two conditions mirrors the interval.
  const auto a = kvq::study::newcombe_paired(20, 12, 2, 16), b = kvq::study::newcombe_paired(20, 2, 12, 16);
  CHECK(std::fabs(a.low + b.high) <= 1e-15);
  CHECK(std::fabs(a.high + b.low) <= 1e-15);
  // No units: no estimate, the whole range.
  const auto none = kvq::study::newcombe_paired(0, 0, 0, 0);
  CHECK((std::isnan(none.diff) && none.low == -1.0 && none.high == 1.0));
  CHECK_THROWS_AS(kvq::study::newcombe_paired(1, 2, 3, 4, 0.0), std::invalid_argument);
  CHECK_THROWS_AS(kvq::study::newcombe_paired(1, 2, 3, 4, std::nan("")), std::invalid_argument);
}

// The pairing matters: with most events shared (large phi) the paired interval is
// narrower than Newcombe's unpaired one for independent proportions (Stat Med 17:873,
// method 10: the same Wilson limits with phi = 0), which is what the independent-samples
// computation gave before.
TEST_CASE("newcombe_paired is narrower than the unpaired interval when events are shared") {
  const std::size_t e = 200, f = 40, g = 10, h = 9750;
  const auto p = kvq::study::newcombe_paired(e, f, g, h);
  const auto w1 = kvq::study::wilson(e + f, e + f + g + h), w2 = kvq::study::wilson(e + g, e + f + g + h);
  const double d = w1.rate - w2.rate;
  const double lo = d - std::sqrt((w1.rate - w1.low) * (w1.rate - w1.low) + (w2.high - w2.rate) * (w2.high - w2.rate));
  const double hi = d + std::sqrt((w1.high - w1.rate) * (w1.high - w1.rate) + (w2.rate - w2.low) * (w2.rate - w2.low));
  CHECK(p.low > lo);
  CHECK(p.high < hi);
  // phi = 0 (e h - f g inside [0, n/2] after the continuity correction) gives the unpaired limits exactly
  const auto q = kvq::study::newcombe_paired(1, 1, 1, 1);  // e h - f g = 0
  const auto v = kvq::study::wilson(2, 4);
  CHECK(std::fabs(q.high - std::sqrt(2.0) * (v.high - v.rate)) <= 1e-15);
}

// The sample size of a paired comparison against a margin: the closed form with the
// normal quantiles from Boost.Math, and by simulation: at the computed n the 95 % upper
// bound of newcombe_paired falls below the margin in about 80 % of the trials (the
// quantity the study's verdict needs), at a quarter of it in far fewer.
TEST_CASE("paired_units_for_power: closed form and simulated power") {
  const boost::math::normal nd;
  CHECK(std::fabs(kvq::study::z_power80 - boost::math::quantile(nd, 0.8)) <= 1e-15);
  const double z = boost::math::quantile(nd, 0.975);
  const double gap = 0.0018, disc = 0.002, margin = 0.002;
  const double want = std::pow((z + boost::math::quantile(nd, 0.8)) * std::sqrt(disc - gap * gap) / (margin - gap), 2);
  const double n = kvq::study::paired_units_for_power(gap, disc, margin);
  CHECK(std::fabs(n - want) <= 1e-9 * want);
  CHECK(std::isinf(kvq::study::paired_units_for_power(0.002, 0.003, 0.002)));
  // symmetric in the side of the margin: showing a gap above it takes as many units
  CHECK(std::fabs(kvq::study::paired_units_for_power(0.0022, 0.002 + 0.0004, 0.002) -
                  kvq::study::paired_units_for_power(0.0018, 0.002, 0.002) *
                      (0.0024 - 0.0022 * 0.0022) / (0.002 - 0.0018 * 0.0018)) <= 1e-6 * n);
  CHECK_THROWS_AS(kvq::study::paired_units_for_power(0.003, 0.002, 0.002), std::invalid_argument);
  CHECK_THROWS_AS(kvq::study::paired_units_for_power(0.001, 1.5, 0.002), std::invalid_argument);
  CHECK_THROWS_AS(kvq::study::paired_units_for_power(std::nan(""), 0.002, 0.002), std::invalid_argument);

  // Simulated: both events with 0.00005, first only 0.0019, second only 0.0001 (gap
  // 0.18 pp, discordance 0.2 %), the multinomial drawn cell by cell.
  const double pe = 0.00005, pf = 0.0019, pg = 0.0001;
  auto power_at = [&](std::size_t units, int trials) {
    std::mt19937_64 rng(12345);
    int hits = 0;
    for (int t = 0; t < trials; ++t) {
      const std::size_t e = std::binomial_distribution<std::size_t>(units, pe)(rng);
      const std::size_t f = std::binomial_distribution<std::size_t>(units - e, pf / (1 - pe))(rng);
      const std::size_t g = std::binomial_distribution<std::size_t>(units - e - f, pg / (1 - pe - pf))(rng);
      if (kvq::study::newcombe_paired(e, f, g, units - e - f - g).high < margin) ++hits;
    }
    return static_cast<double>(hits) / trials;
  };
  const std::size_t units = static_cast<std::size_t>(std::ceil(kvq::study::paired_units_for_power(pf - pg, pf + pg, margin)));
  const double p80 = power_at(units, 2000);
  INFO("units " << units << ", simulated power " << p80);
  CHECK(p80 > 0.72);
  CHECK(p80 < 0.87);
  CHECK(power_at(units / 4, 1000) < 0.4);
}
