// Rank correlations: hand-derived cases, O(n^2) oracles on random tied inputs, edges.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <vector>

#include <kvq/metrics/rank.hpp>
#include <kvq/metrics/weighted_tau.hpp>

#include "oracle.hpp"

using namespace kvq::metrics;

namespace {
const double nan_d = std::numeric_limits<double>::quiet_NaN();
}

TEST_CASE("kendall_tau_b: hand-derived small cases", "[metrics][rank]") {
  // x = 1 2 3 4, y = 1 3 2 4. Of the 6 pairs only (1,2) (0-based) is discordant:
  // x rises 2->3 while y falls 3->2. n_c = 5, n_d = 1, no ties: tau = 4/6 = 2/3.
  std::vector<double> x{1, 2, 3, 4}, y{1, 3, 2, 4};
  CHECK(kendall_tau_b(x, y) == Approx(2.0 / 3.0).epsilon(1e-15));
  // x = 1 1 2 3, y = 1 2 2 3. Pair (0,1) tied in x, pair (1,2) tied in y, the other 4
  // concordant. n0 = 6, n1 = n2 = 1: tau_b = 4 / sqrt(5 * 5) = 0.8.
  CHECK(kendall_tau_b(std::vector<double>{1, 1, 2, 3}, std::vector<double>{1, 2, 2, 3}) == Approx(0.8));
  // x = 1 2 2 3, y = 3 1 2 1. Pairs (0,1) (0,2) (0,3) (2,3) discordant, (1,2) tied in x,
  // (1,3) tied in y: tau_b = -4 / sqrt(5 * 5) = -0.8.
  CHECK(kendall_tau_b(std::vector<double>{1, 2, 2, 3}, std::vector<double>{3, 1, 2, 1}) == Approx(-0.8));
}

TEST_CASE("spearman_rho: hand-derived small cases", "[metrics][rank]") {
  // No ties: rho = 1 - 6 sum d^2 / (n (n^2 - 1)); d = 0 1 1 0 -> 1 - 12/60 = 0.8.
  CHECK(spearman_rho(std::vector<double>{1, 2, 3, 4}, std::vector<double>{1, 3, 2, 4}) == Approx(0.8));
  // x = 1 1 2 3 -> ranks 1.5 1.5 3 4; y = 1 2 2 3 -> ranks 1 2.5 2.5 4; mean 2.5.
  // Deviations x: -1 -1 .5 1.5, y: -1.5 0 0 1.5. sum xy = 1.5 + 2.25 = 3.75,
  // sum xx = sum yy = 4.5, rho = 3.75 / 4.5 = 5/6.
  CHECK(spearman_rho(std::vector<double>{1, 1, 2, 3}, std::vector<double>{1, 2, 2, 3}) == Approx(5.0 / 6.0));
}

TEST_CASE("weighted_kendall_tau: hand-derived small cases", "[metrics][rank]") {
  // x = 5 4 3 2 1, y = 1 5 4 3 2: element 0 is discordant with every other, the rest
  // are concordant. Ranked by x: weights 1, 1/2, 1/3, 1/4, 1/5 (sum 137/60),
  // all-pairs weight tot = (n-1) * 137/60 = 548/60, discordant weight
  // D = 4*1 + (1/2+1/3+1/4+1/5) = 317/60, tau1 = (548 - 2*317)/548 = -43/274.
  // Ranked by y: element 0 has rank 4 (weight 1/5), the others 1, 1/2, 1/3, 1/4:
  // D = 4/5 + 25/12 = 173/60, tau2 = (548 - 346)/548 = 101/274. Mean: 29/274.
  // (scipy.stats.weightedtau gives 0.10583941605839411.)
  std::vector<double> x{5, 4, 3, 2, 1}, y{1, 5, 4, 3, 2};
  CHECK(weighted_kendall_tau(x, y) == Approx(29.0 / 274.0).epsilon(1e-14));
  // With ties: x = 2 2 1, y = 1 2 1. Lexicographic ranks by (x, y): element 1 (2,2)
  // rank 0, element 0 (2,1) rank 1, element 2 rank 2 -> w = 1/2, 1, 1/3; the same by
  // (y, x). Pair (0,1) tied in x (weight 3/2, only in the y norm), pair (0,2) tied in y
  // (weight 5/6, only in the x norm), pair (1,2) concordant (weight 4/3).
  // tau = (4/3) / sqrt((5/6 + 4/3)(3/2 + 4/3)) = 8 / sqrt(221).
  CHECK(weighted_kendall_tau(std::vector<double>{2, 2, 1}, std::vector<double>{1, 2, 1}) ==
        Approx(8.0 / std::sqrt(221.0)).epsilon(1e-14));
}

TEMPLATE_TEST_CASE("rank metrics match the O(n^2) oracles on random tied inputs", "[metrics][rank]", float,
                   double) {
  std::mt19937_64 g(12345);
  workspace ws(400);
  for (int rep = 0; rep < 200; ++rep) {
    const std::size_t n = 2 + g() % 300;
    const int levels = 2 + static_cast<int>(g() % 40);
    auto x = oracle::tied_values<double>(g, n, levels);
    auto y = oracle::tied_values<TestType>(g, n, levels);
    // mix in correlation so that tau is not always near 0
    if (rep % 3 == 0)
      for (std::size_t i = 0; i < n; ++i)
        if (g() % 4 != 0) y[i] = static_cast<TestType>(x[i]);
    const double kt = oracle::kendall_tau_b(x, y);
    const double sr = oracle::spearman_rho(x, y);
    const double wt = oracle::weighted_tau(x, y);
    if (std::isnan(kt)) {
      CHECK(std::isnan(kendall_tau_b(x.data(), y.data(), n, ws.view())));
    } else {
      CHECK(kendall_tau_b(x.data(), y.data(), n, ws.view()) == Approx(kt).margin(1e-14));
      CHECK(spearman_rho(x.data(), y.data(), n, ws.view()) == Approx(sr).margin(1e-13));
      CHECK(weighted_kendall_tau(x.data(), y.data(), n, ws.view()) == Approx(wt).margin(1e-12));
    }
  }
}

TEST_CASE("rank metrics: edge cases", "[metrics][rank]") {
  // identical inputs give 1; reversed give -1
  std::vector<double> p{0.1, 0.4, 0.2, 0.3};
  std::vector<double> r{0.4, 0.1, 0.3, 0.2};  // order exactly reversed
  CHECK(kendall_tau_b(p, p) == 1.0);
  CHECK(spearman_rho(p, p) == 1.0);
  CHECK(weighted_kendall_tau(p, p) == 1.0);
  CHECK(kendall_tau_b(p, r) == -1.0);
  CHECK(spearman_rho(p, r) == -1.0);
  CHECK(weighted_kendall_tau(p, r) == -1.0);
  // n = 2: +1 or -1
  CHECK(kendall_tau_b(std::vector<double>{1, 2}, std::vector<float>{3, 4}) == 1.0);
  CHECK(kendall_tau_b(std::vector<double>{1, 2}, std::vector<float>{4, 3}) == -1.0);
  CHECK(spearman_rho(std::vector<double>{1, 2}, std::vector<float>{4, 3}) == -1.0);
  CHECK(weighted_kendall_tau(std::vector<double>{1, 2}, std::vector<float>{4, 3}) == -1.0);
  // n = 1 and all-ties: 0/0, undefined -> NaN
  CHECK(std::isnan(kendall_tau_b(std::vector<double>{1}, std::vector<double>{1})));
  CHECK(std::isnan(spearman_rho(std::vector<double>{1}, std::vector<double>{1})));
  CHECK(std::isnan(weighted_kendall_tau(std::vector<double>{1}, std::vector<double>{1})));
  std::vector<double> flat(7, 0.25), any{1, 2, 3, 4, 5, 6, 7};
  CHECK(std::isnan(kendall_tau_b(flat, any)));
  CHECK(std::isnan(kendall_tau_b(any, flat)));
  CHECK(std::isnan(spearman_rho(flat, any)));
  CHECK(std::isnan(weighted_kendall_tau(any, flat)));
  // -0 and +0 are a tie
  CHECK(kendall_tau_b(std::vector<double>{-0.0, 0.0, 1.0}, std::vector<double>{0.0, 0.0, 1.0}) == 1.0);
  // NaN in an input -> NaN
  CHECK(std::isnan(kendall_tau_b(std::vector<double>{1, nan_d, 3}, std::vector<double>{1, 2, 3})));
  CHECK(std::isnan(spearman_rho(std::vector<double>{1, 2, 3}, std::vector<double>{1, nan_d, 3})));
  CHECK(std::isnan(weighted_kendall_tau(std::vector<double>{1, 2, 3}, std::vector<double>{1, nan_d, 3})));
  // bad arguments
  CHECK_THROWS_AS(kendall_tau_b(std::vector<double>{}, std::vector<double>{}), std::invalid_argument);
  CHECK_THROWS_AS(kendall_tau_b(std::vector<double>{1, 2}, std::vector<double>{1}), std::invalid_argument);
  CHECK_THROWS_AS(spearman_rho(std::vector<double>{1, 2}, std::vector<double>{1}), std::invalid_argument);
  CHECK_THROWS_AS(weighted_kendall_tau(std::vector<double>{}, std::vector<double>{}), std::invalid_argument);
  // a workspace that is too small gives NaN rather than writing out of bounds
  workspace small(2);
  CHECK(std::isnan(kendall_tau_b(p.data(), p.data(), p.size(), small.view())));
}

TEST_CASE("kendall_tau_b at 128k keys: inversion count from an independent Fenwick tree", "[metrics][rank]") {
  const std::size_t n = 131072;
  std::mt19937_64 g(7);
  std::vector<std::uint32_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0u);
  // Partially shuffle: long runs keep tau away from 0.
  for (std::size_t i = 0; i + 1 < n; i += 2)
    if (g() % 8 == 0) std::swap(perm[i], perm[(i + g() % 1000) % n]);
  std::vector<double> x(n), y(n);
  for (std::size_t i = 0; i < n; ++i) {
    x[i] = static_cast<double>(i);
    y[i] = static_cast<double>(perm[i]);
  }
  // inversions of perm by a Binary Indexed Tree (no ties: tau = 1 - 4 inv / (n (n-1)))
  std::vector<std::uint64_t> bit(n + 1, 0);
  std::uint64_t inv = 0;
  for (std::size_t i = n; i-- > 0;) {
    for (std::size_t k = perm[i]; k > 0; k -= k & (~k + 1)) inv += bit[k];
    for (std::size_t k = perm[i] + 1; k <= n; k += k & (~k + 1)) ++bit[k];
  }
  const double expected =
      1.0 - 4.0 * static_cast<double>(inv) / (static_cast<double>(n) * static_cast<double>(n - 1));
  workspace ws(n);
  const double tau = kendall_tau_b(x.data(), y.data(), n, ws.view());
  const double rho = spearman_rho(x.data(), y.data(), n, ws.view());
  const double wt = weighted_kendall_tau(x.data(), y.data(), n, ws.view());
  CHECK(tau == Approx(expected).margin(1e-12));
  CHECK(rho > 0.9);
  CHECK(wt > 0.5);
  // repeatable bit for bit
  CHECK(kendall_tau_b(x.data(), y.data(), n, ws.view()) == tau);
  CHECK(weighted_kendall_tau(x.data(), y.data(), n, ws.view()) == wt);
}
