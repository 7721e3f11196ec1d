// kvq/device/metrics.hpp — per-query rank and distribution metrics (kvq/metrics/) between
// reference weights P and emulated weights P̂ for a batch of queries, on any Thrust
// device system.
//
// One work item per query calls the metrics layer's own KVQ_HD functions with its own
// workspace slice, so every value is the serial function's bits on every backend.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <kvq/config.hpp>
#include <kvq/device/system.hpp>
#include <kvq/metrics/distribution.hpp>
#include <kvq/metrics/rank.hpp>
#include <kvq/metrics/topk.hpp>
#include <kvq/metrics/weighted_tau.hpp>
#include <kvq/metrics/workspace.hpp>

#include <thrust/device_vector.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

namespace kvq {
namespace device {

/// The metrics of one query (see kvq/metrics/ for definitions and NaN conventions).
struct query_metrics {
  double kendall_tau_b = 0, weighted_tau = 0, spearman_rho = 0;
  double kl = 0, js = 0, tv = 0, underflow_fraction = 0, argmax_flip = 0;
  double topk_recall[3] = {0, 0, 0};       // k = 1, 8, 32 (capped at n)
  double topk_dropped_mass[3] = {0, 0, 0};  // emulated mass outside the reference top-k
};

namespace detail {
struct metrics_fn {
  const double *p, *q;
  std::size_t n;
  metrics::index_t *a, *b, *c, *d;
  std::int64_t* i64;
  double* f64;
  query_metrics* out;
  KVQ_HD void operator()(std::size_t i) const {
    const double* pi = p + i * n;
    const double* qi = q + i * n;
    const metrics::workspace_view ws{a + i * n, b + i * n, c + i * n, d + i * n, i64 + i * n, f64 + i * n, n};
    query_metrics m;
    m.kendall_tau_b = metrics::kendall_tau_b(pi, qi, n, ws);
    m.weighted_tau = metrics::weighted_kendall_tau(pi, qi, n, ws);
    m.spearman_rho = metrics::spearman_rho(pi, qi, n, ws);
    m.kl = metrics::kl_divergence(pi, qi, n).value;
    m.js = metrics::js_divergence(pi, qi, n);
    m.tv = metrics::total_variation(pi, qi, n);
    m.underflow_fraction = metrics::underflow(pi, qi, n).fraction;
    m.argmax_flip = metrics::argmax_flip(pi, qi, n);
    const std::size_t ks[3] = {1 < n ? std::size_t(1) : n, 8 < n ? std::size_t(8) : n, 32 < n ? std::size_t(32) : n};
    metrics::topk_result r[3];
    metrics::topk_metrics(pi, qi, n, ks, 3, r, ws);
    for (int k = 0; k < 3; ++k) {
      m.topk_recall[k] = r[k].recall;
      m.topk_dropped_mass[k] = r[k].emulated_outside;
    }
    out[i] = m;
  }
};
}  // namespace detail

/// Metrics of nq queries: P and P_hat are nq x n (row-major), out gets nq entries.
/// (DoubleVec: thrust::device_vector<double>; a template so that the kernel is compiled
/// only where it is used.)
template <class DoubleVec>
void query_metrics_batch(const DoubleVec& P, const DoubleVec& P_hat, std::size_t nq, std::size_t n,
                         thrust::device_vector<query_metrics>& out) {
  static_assert(std::is_same<typename DoubleVec::value_type, double>::value, "kvq::device: P, P_hat hold doubles");
  if (P.size() != nq * n || P_hat.size() != nq * n)
    throw std::invalid_argument("kvq::device::query_metrics_batch: P holds " + std::to_string(P.size()) +
                                " and P_hat " + std::to_string(P_hat.size()) + " values; nq=" + std::to_string(nq) +
                                ", n=" + std::to_string(n) + " needs " + std::to_string(nq * n));
  thrust::device_vector<metrics::index_t> a(nq * n), b(nq * n), c(nq * n), d(nq * n);
  thrust::device_vector<std::int64_t> i64(nq * n);
  thrust::device_vector<double> f64(nq * n);
  out.resize(nq);
  thrust::for_each(thrust::counting_iterator<std::size_t>(0), thrust::counting_iterator<std::size_t>(nq),
                   detail::metrics_fn{thrust::raw_pointer_cast(P.data()), thrust::raw_pointer_cast(P_hat.data()), n,
                                      thrust::raw_pointer_cast(a.data()), thrust::raw_pointer_cast(b.data()),
                                      thrust::raw_pointer_cast(c.data()), thrust::raw_pointer_cast(d.data()),
                                      thrust::raw_pointer_cast(i64.data()), thrust::raw_pointer_cast(f64.data()),
                                      thrust::raw_pointer_cast(out.data())});
}

}  // namespace device
}  // namespace kvq
