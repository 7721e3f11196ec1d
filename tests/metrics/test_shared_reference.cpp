// The weight metrics against a prepared reference (prepare_reference + the shared
// weight_metrics) must give the same bits as the per-metric path, which sorts p again for
// every metric: random rows, rows with many ties (quantized values, zeros, -0 and +0),
// constant rows, NaN rows and every small n.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <kvq/metrics/suite.hpp>

using namespace kvq::metrics;

namespace {

// Bits of a double: NaN payloads and the sign of zero count.
std::uint64_t bits(double v) {
  std::uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}

// Compares every metric of the shared path with the per-metric path, bit for bit; o and
// ô are fixed so the output error takes part too.
void check_same(const std::vector<double>& p, const std::vector<double>& q) {
  const std::size_t n = p.size();
  workspace ws(n);
  query_metrics old_r;
  weight_metrics(p.data(), q.data(), n, ws.view(), old_r);
  prepared_reference ref(p.data(), n);
  workspace ws2(n);
  query_metrics new_r;
  weight_metrics(ref.view(), q.data(), ws2.view(), new_r);
  double a[metric_count], b[metric_count];
  metric_values(old_r, a);
  metric_values(new_r, b);
  for (std::size_t i = 0; i < metric_count; ++i) {
    INFO("n = " << n << ", metric " << metric_columns[i].name << ": " << a[i] << " vs " << b[i]);
    CHECK(bits(a[i]) == bits(b[i]));
  }
  CHECK(old_r.nonfinite == new_r.nonfinite);
  // The full query (output error included) through evaluate_query's two overloads.
  const double o[3] = {1.0, -2.0, 0.5};
  const float oh[3] = {1.0f, -2.0f, 0.25f};
  const query_metrics e1 = evaluate_query(p.data(), q.data(), n, o, oh, 3, ws.view());
  const query_metrics e2 = evaluate_query(ref.view(), q.data(), o, oh, 3, ws2.view());
  metric_values(e1, a);
  metric_values(e2, b);
  for (std::size_t i = 0; i < metric_count; ++i) CHECK(bits(a[i]) == bits(b[i]));
}

// A row of n weights drawn from `levels` distinct values (levels = 0: continuous).
std::vector<double> row(std::mt19937_64& g, std::size_t n, int levels, double zero_share) {
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::vector<double> x(n);
  for (auto& v : x) {
    const double r = u(g);
    v = levels > 0 ? std::floor(r * levels) / levels : std::exp(8.0 * r);
    if (u(g) < zero_share) v = (u(g) < 0.5) ? 0.0 : -0.0;
  }
  return x;
}

}  // namespace

TEST_CASE("shared reference: random and tie-heavy rows give the per-metric bits", "[metrics][shared]") {
  std::mt19937_64 g(20261202);
  const std::size_t sizes[] = {1, 2, 3, 5, 7, 8, 9, 31, 63, 64, 65, 100, 257, 1000, 4099};
  const int levels[] = {0, 2, 3, 16, 1000};
  for (std::size_t n : sizes)
    for (int lp : levels)
      for (int lq : levels)
        for (double z : {0.0, 0.3}) check_same(row(g, n, lp, z), row(g, n, lq, z));
}

TEST_CASE("shared reference: emulated row close to the reference (few exchanges)", "[metrics][shared]") {
  // The emulated row is p rounded to a coarse grid: ties in p̂ inside the top, the case
  // of a quantized cache.
  std::mt19937_64 g(7);
  for (std::size_t n : {64, 500, 3000}) {
    const std::vector<double> p = row(g, n, 0, 0.0);
    std::vector<double> q(n);
    for (std::size_t i = 0; i < n; ++i) q[i] = std::round(p[i] * 4.0) / 4.0;
    check_same(p, q);
    check_same(q, p);
    check_same(p, p);
  }
}

TEST_CASE("shared reference: constant, NaN and empty rows", "[metrics][shared]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  std::mt19937_64 g(3);
  for (std::size_t n : {1, 2, 10, 70}) {
    const std::vector<double> c(n, 0.25), r = row(g, n, 0, 0.0);
    check_same(c, r);
    check_same(r, c);
    check_same(c, c);
    std::vector<double> rn = r;
    rn[n / 2] = nan;
    check_same(rn, r);
    check_same(r, rn);
  }
  check_same({}, {});
}

TEST_CASE("shared reference: the prepared order is the attention order", "[metrics][shared]") {
  // position[] must be what attention_order() gives, ties by increasing index.
  const std::vector<double> p = {0.5, 1.0, 0.5, -0.0, 1.0, 0.0, 0.25};
  prepared_reference ref(p.data(), p.size());
  const reference_view v = ref.view();
  std::vector<index_t> order(p.size()), tmp(p.size());
  attention_order(p.data(), p.size(), order.data(), tmp.data());
  for (std::size_t i = 0; i < p.size(); ++i) CHECK(v.position[order[i]] == i);
  CHECK(v.tied_pairs == 3);  // {0.5, 0.5}, {1, 1}, {-0, +0}
  // A copy keeps a valid view (the pointers follow the copied arrays).
  const prepared_reference copy = ref;
  CHECK(copy.view().position != v.position);
  for (std::size_t i = 0; i < p.size(); ++i) CHECK(copy.view().position[i] == v.position[i]);
}
