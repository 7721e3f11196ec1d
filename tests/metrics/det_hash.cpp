// Prints the bits of every metric on fixed synthetic inputs. CMake builds this program
// with different optimisation flags (-O0, -O3, -O3 -march=native) and requires identical
// output; within one run the per-query metrics are computed serially and with 2 threads
// and must agree bit for bit.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include <kvq/core/math.hpp>
#include <kvq/metrics.hpp>

namespace {
std::uint64_t bits(double x) {
  std::uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}
std::uint64_t mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
// A softmax row from counter-based logits (kvq's exp; fixed-tree normalisation).
std::vector<double> row(std::uint64_t seed, std::size_t n, double scale) {
  std::vector<double> e(n);
  for (std::size_t i = 0; i < n; ++i) {
    const double u = static_cast<double>(mix(seed * 1000003 + i) >> 11) * 0x1.0p-53;
    e[i] = kvq::math::exp(scale * (u - 0.5) + (i < 4 ? 6.0 : 0.0));  // 4 sink tokens
  }
  const double s = kvq::reduce::tree_sum(e.data(), n);
  for (auto& v : e) v = v / s;
  return e;
}
// The emulated row: p rounded to a coarse grid (values below the grid step flush to 0).
std::vector<float> emulate(const std::vector<double>& p) {
  std::vector<float> q(p.size());
  for (std::size_t i = 0; i < p.size(); ++i) {
    const double step = 1.0 / 65536.0;
    q[i] = static_cast<float>(static_cast<double>(static_cast<std::int64_t>(p[i] / step)) * step);
  }
  return q;
}

struct per_query {
  double v[16];
};

per_query compute(std::uint64_t qi, std::size_t n) {
  using namespace kvq::metrics;
  const auto p = row(qi, n, 12.0);
  const auto q = emulate(p);
  workspace ws(n);
  per_query r{};
  r.v[0] = kendall_tau_b(p.data(), q.data(), n, ws.view());
  r.v[1] = weighted_kendall_tau(p.data(), q.data(), n, ws.view());
  r.v[2] = spearman_rho(p.data(), q.data(), n, ws.view());
  const std::size_t ks[2] = {8, 64};
  topk_result tk[2];
  topk_metrics(p.data(), q.data(), n, ks, 2, tk, ws.view());
  r.v[3] = tk[0].recall;
  r.v[4] = tk[1].recall;
  r.v[5] = tk[1].emulated_outside;
  r.v[6] = argmax_flip(p.data(), q.data(), n);
  const auto kl = kl_divergence(p.data(), q.data(), n);
  r.v[7] = kl.finite_part;
  r.v[8] = static_cast<double>(kl.infinite_terms);
  r.v[9] = js_divergence(p.data(), q.data(), n);
  r.v[10] = total_variation(p.data(), q.data(), n);
  r.v[11] = underflow(p.data(), q.data(), n).fraction;
  const std::size_t needles[3] = {n / 2, n / 2 + 1, n / 2 + 2};
  r.v[12] = needle_metrics(p.data(), q.data(), n, needles, 3).retained;
  const auto o = output_metrics(p.data(), q.data(), n);
  r.v[13] = o.relative_l1;
  r.v[14] = o.cosine;
  r.v[15] = o.rmse;
  return r;
}
}  // namespace

int main() {
  const std::size_t queries = 6, n = 4096 + 37;
  std::vector<per_query> serial(queries), threaded(queries);
  for (std::size_t q = 0; q < queries; ++q) serial[q] = compute(q, n);
  std::thread t([&] {
    for (std::size_t q = 0; q < queries; q += 2) threaded[q] = compute(q, n);
  });
  for (std::size_t q = 1; q < queries; q += 2) threaded[q] = compute(q, n);
  t.join();
  if (std::memcmp(serial.data(), threaded.data(), sizeof(per_query) * queries) != 0) {
    std::printf("serial and 2-thread results differ\n");
    return 1;
  }
  std::vector<double> tau(queries);
  for (std::size_t q = 0; q < queries; ++q) {
    std::printf("q%zu", q);
    for (double v : serial[q].v) std::printf(" %016llx", static_cast<unsigned long long>(bits(v)));
    std::printf("\n");
    tau[q] = serial[q].v[0];
  }
  const auto s = kvq::metrics::aggregate(tau, kvq::metrics::better::higher, {0.5, 0.9});
  std::printf("agg %016llx %016llx %016llx\n", static_cast<unsigned long long>(bits(s.mean)),
              static_cast<unsigned long long>(bits(s.quantiles[0])), static_cast<unsigned long long>(bits(s.quantiles[1])));
  return 0;
}
