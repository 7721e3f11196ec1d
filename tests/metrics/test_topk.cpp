// Top-k recall, mass outside the reference top-k, argmax flips and needle metrics.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include <kvq/metrics/needle.hpp>
#include <kvq/metrics/topk.hpp>

#include "oracle.hpp"

using namespace kvq::metrics;

namespace {
// Naive top-k set: key i is in it iff fewer than k keys precede it (larger value, or
// equal value and lower index).
template <class T>
std::set<std::size_t> naive_topk(const std::vector<T>& x, std::size_t k) {
  std::set<std::size_t> s;
  for (std::size_t i = 0; i < x.size(); ++i) {
    std::size_t before = 0;
    for (std::size_t j = 0; j < x.size(); ++j)
      if (x[j] > x[i] || (x[j] == x[i] && j < i)) ++before;
    if (before < k) s.insert(i);
  }
  return s;
}
}  // namespace

TEST_CASE("top-k: hand-derived cases", "[metrics][topk]") {
  // p order: 1 (.4), 3 (.3), 2 (.2), 0 (.1); q order: 1 (.4), 0 (.3), 2 (.2), 3 (.1).
  // k=1: {1} vs {1} -> 1; k=2: {1,3} vs {1,0} -> 1/2; k=3: {1,3,2} vs {1,0,2} -> 2/3; k=4 -> 1.
  // Outside p's top-2 are keys 0 and 2: p mass .1 + .2 = .3, q mass .3 + .2 = .5.
  std::vector<double> p{0.1, 0.4, 0.2, 0.3};
  std::vector<double> q{0.3, 0.4, 0.2, 0.1};
  const auto r = topk_metrics(p, q, {1, 2, 3, 4});
  REQUIRE(r.size() == 4);
  CHECK(r[0].recall == 1.0);
  CHECK(r[1].recall == 0.5);
  CHECK(r[2].recall == Approx(2.0 / 3.0).epsilon(1e-15));
  CHECK(r[3].recall == 1.0);
  CHECK(r[1].k == 2);
  CHECK(r[1].reference_outside == Approx(0.3).epsilon(1e-15));
  CHECK(r[1].emulated_outside == Approx(0.5).epsilon(1e-15));
  CHECK(r[3].reference_outside == 0.0);
  // Ties: the lower index wins. Uniform p: top-2 = {0, 1}. q = (.1 .3 .3 .3): top-2 = {1, 2}.
  std::vector<double> u(4, 0.25), q2{0.1, 0.3, 0.3, 0.3};
  CHECK(topk_recall(u.data(), u.data(), 4, 2) == 1.0);
  CHECK(topk_recall(u.data(), q2.data(), 4, 2) == 0.5);
  CHECK_THROWS_AS(topk_metrics(p, q, {0}), std::invalid_argument);
  CHECK_THROWS_AS(topk_metrics(p, q, {5}), std::invalid_argument);
}

TEST_CASE("top-k: agrees with a naive set intersection on random tied inputs", "[metrics][topk]") {
  std::mt19937_64 g(21);
  workspace ws(600);
  for (int rep = 0; rep < 200; ++rep) {
    const std::size_t n = 1 + g() % 500;
    const auto p = oracle::tied_values<double>(g, n, 2 + static_cast<int>(g() % 30));
    const auto q = oracle::tied_values<float>(g, n, 2 + static_cast<int>(g() % 30));
    std::vector<std::size_t> ks{1, n, 1 + g() % n, 1 + g() % n};
    std::vector<topk_result> out(ks.size());
    topk_metrics(p.data(), q.data(), n, ks.data(), ks.size(), out.data(), ws.view());
    for (std::size_t j = 0; j < ks.size(); ++j) {
      const auto sp = naive_topk(p, ks[j]);
      const auto sq = naive_topk(q, ks[j]);
      std::size_t common = 0;
      long double outp = 0, outq = 0;
      for (std::size_t i = 0; i < n; ++i) {
        if (sp.count(i) && sq.count(i)) ++common;
        if (!sp.count(i)) {
          outp += p[i];
          outq += q[i];
        }
      }
      CHECK(out[j].recall == static_cast<double>(common) / static_cast<double>(ks[j]));
      CHECK(out[j].reference_outside == Approx(static_cast<double>(outp)).margin(1e-13));
      CHECK(out[j].emulated_outside == Approx(static_cast<double>(outq)).margin(1e-13));
    }
  }
}

TEST_CASE("argmax flip", "[metrics][topk]") {
  // p ties keys 0 and 1 -> argmax 0 (lower index); q's maximum is key 1: flipped.
  CHECK(argmax_flip(std::vector<double>{0.5, 0.5, 0}, std::vector<double>{0.4, 0.6, 0}) == 1.0);
  CHECK(argmax_flip(std::vector<double>{0.5, 0.5}, std::vector<double>{0.5, 0.5}) == 0.0);
  CHECK(argmax_flip(std::vector<double>{0.2, 0.8}, std::vector<float>{0.1f, 0.9f}) == 0.0);
  CHECK(std::isnan(argmax_flip(std::vector<double>{0.2, std::nan("")}, std::vector<double>{0.1, 0.9})));
}

TEST_CASE("needle metrics: hand-derived case", "[metrics][needle]") {
  // p order: 1 (.6), 3 (.25), 2 (.1), 0 (.05) -> needle ranks key1: 1, key2: 3.
  // q = (.3 .3 .1 .3) order: 0, 1, 3 (ties by index), 2 -> key1: 2, key2: 4.
  // mass: p .6 + .1 = .7, q .3 + .1 = .4, retained 4/7.
  std::vector<double> p{0.05, 0.6, 0.1, 0.25};
  std::vector<float> q{0.3f, 0.3f, 0.1f, 0.3f};
  std::vector<std::size_t> rr, re;
  const auto r = needle_metrics(p.data(), q.data(), 4, {1, 2}, &rr, &re);
  CHECK(rr == std::vector<std::size_t>{1, 3});
  CHECK(re == std::vector<std::size_t>{2, 4});
  CHECK(r.best_rank_reference == 1);
  CHECK(r.best_rank_emulated == 2);
  CHECK(r.mass_reference == Approx(0.7).epsilon(1e-15));
  CHECK(r.mass_emulated == Approx(0.4).epsilon(1e-7));  // q is float
  CHECK(r.retained == Approx(static_cast<double>(0.3f + 0.1f) / 0.7).epsilon(1e-7));
  // p_N = 0: retained is +inf if p̂_N > 0, NaN if p̂_N = 0
  CHECK(needle_metrics(std::vector<double>{1, 0}, std::vector<double>{0.5, 0.5}, {1}).retained ==
        std::numeric_limits<double>::infinity());
  CHECK(std::isnan(needle_metrics(std::vector<double>{1, 0}, std::vector<double>{1, 0}, {1}).retained));
  CHECK_THROWS_AS(needle_metrics(p, q, {4}), std::invalid_argument);
  CHECK_THROWS_AS(needle_metrics(p, q, {1, 1}), std::invalid_argument);
  CHECK_THROWS_AS(needle_metrics(p, q, {}), std::invalid_argument);
}
