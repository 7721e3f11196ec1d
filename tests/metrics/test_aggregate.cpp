// Aggregation over queries: counting of non-finite values, type-7 quantiles.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include <kvq/metrics/aggregate.hpp>

using namespace kvq::metrics;

TEST_CASE("aggregate: hand-derived quantiles and counts", "[metrics][aggregate]") {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // finite values 4 1 3 2 5 -> sorted 1 2 3 4 5 (m = 5); mean 3.
  // type 7: h = 4q. q = .5 -> h = 2 -> 3; q = .9 -> h = 3.6 -> 4 + .6 * 1 = 4.6;
  // q = .25 -> h = 1 -> 2; q = 0 -> 1; q = 1 -> 5.
  std::vector<double> v{4, nan, 1, inf, 3, 2, -inf, 5, inf};
  const auto s = aggregate(v, better::lower, {0.5, 0.9, 0.25, 0.0, 1.0});
  CHECK(s.count == 9);
  CHECK(s.finite == 5);
  CHECK(s.nan == 1);
  CHECK(s.pos_inf == 2);
  CHECK(s.neg_inf == 1);
  CHECK(s.nonfinite() == 4);
  CHECK(s.mean == 3.0);
  CHECK(s.min == 1.0);
  CHECK(s.max == 5.0);
  CHECK(s.worst == 5.0);
  CHECK(s.quantiles[0] == 3.0);
  CHECK(s.quantiles[1] == Approx(4.6).epsilon(1e-15));
  CHECK(s.quantiles[2] == 2.0);
  CHECK(s.quantiles[3] == 1.0);
  CHECK(s.quantiles[4] == 5.0);
  CHECK(aggregate(v, better::higher).worst == 1.0);
  // two values: median interpolates
  CHECK(aggregate(std::vector<double>{1, 2}, better::lower, {0.5}).quantiles[0] == 1.5);
  // a single value is every quantile
  CHECK(aggregate(std::vector<double>{7}, better::lower, {0.1, 0.99}).quantiles ==
        std::vector<double>{7, 7});
}

TEST_CASE("aggregate: nothing finite, bad levels, the aggregator", "[metrics][aggregate]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const auto s = aggregate(std::vector<double>{nan, nan}, better::higher);
  CHECK(s.finite == 0);
  CHECK(s.nan == 2);
  CHECK(std::isnan(s.mean));
  CHECK(std::isnan(s.worst));
  CHECK(std::isnan(s.quantiles[0]));
  CHECK(aggregate(std::vector<double>{}, better::higher).count == 0);
  CHECK_THROWS_AS(aggregate(std::vector<double>{1}, better::higher, {1.5}), std::invalid_argument);
  CHECK_THROWS_AS(aggregate(std::vector<double>{1}, better::higher, {nan}), std::invalid_argument);
  aggregator a(better::higher, {0.5});
  for (double x : {0.9, 0.8, 1.0}) a.add(x);
  const auto r = a.result();
  CHECK(r.worst == 0.8);
  CHECK(r.quantiles[0] == 0.9);
  CHECK(r.mean == Approx(0.9).epsilon(1e-15));
}
