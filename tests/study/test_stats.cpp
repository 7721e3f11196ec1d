// kvq/study/stats.hpp's Student-t interval against Boost.Math (an independent
// implementation of the t distribution) and against hand arithmetic.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

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
