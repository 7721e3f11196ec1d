/// \file
/// kvq/device/metrics.hpp — per-query rank and distribution metrics (kvq/metrics/) between
/// reference weights P and emulated weights P̂ for a batch of queries, on any Thrust
/// device system.
///
/// One work item per query calls the metrics suite (kvq/metrics/suite.hpp: the same
/// definitions and default k as the host studies) with its own workspace slice, so every
/// value is the serial function's bits on every backend. The output-error fields stay 0:
/// the batch compares weights only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <kvq/config.hpp>
#include <kvq/device/system.hpp>
#include <kvq/metrics/suite.hpp>
#include <kvq/metrics/workspace.hpp>

#include <thrust/device_vector.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

namespace kvq {
namespace device {

/// The metrics of one query: the suite's type (see kvq/metrics/suite.hpp).
using query_metrics = metrics::query_metrics;

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
    metrics::weight_metrics(pi, qi, n, ws, m);
    out[i] = m;
  }
};
}  // namespace detail

/// Metrics of nq queries: P and P_hat are nq x n (row-major), out gets nq entries.
/// (DoubleVec: thrust::device_vector<double>; a template so that the kernel is compiled
/// only where it is used.)
/// \throws std::invalid_argument if P or P_hat does not hold nq x n values.
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
