/// \file
/// kvq/device/attention.hpp — the attention kernels of kvq/attention/kernels.hpp (double
/// reference, storage-only fp32/bf16 emulation, FlashAttention-3 FP8 forward emulation)
/// for a batch of queries on any Thrust device system.
///
/// One work item per query runs the layer's own KVQ_HD kernel on that query's rows with
/// its own slice of scratch memory, so the weights and outputs are the serial kernel's
/// bits on every backend (all sums inside are kvq's fixed trees, all exponentials kvq's).
/// Memory per query is the kernel's O(n + d log n) scratch plus its outputs.
///
/// Layout: Q is nq x d, K and V are n x d, row-major and contiguous. Outputs: P (nq x n
/// doubles; the reference weights, or the effective weights p_eff of the emulated
/// kernels), O (nq x d), status (nq x 2 bytes: nonfinite_scores, nonfinite_output).
/// Sizes are checked on the host (std::invalid_argument naming the sizes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <kvq/attention/kernels.hpp>
#include <kvq/config.hpp>
#include <kvq/device/system.hpp>

#include <thrust/device_vector.h>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>

namespace kvq {
namespace device {
namespace detail {

inline void check_attention_sizes(const char* fn, std::size_t q_size, std::size_t k_size, std::size_t v_size,
                                  std::size_t nq, std::size_t n, std::size_t d) {
  if (d == 0 || q_size != nq * d || k_size != n * d || v_size != n * d)
    throw std::invalid_argument(std::string("kvq::device::") + fn + ": Q holds " + std::to_string(q_size) +
                                " values, K " + std::to_string(k_size) + ", V " + std::to_string(v_size) + "; nq=" +
                                std::to_string(nq) + ", n=" + std::to_string(n) + ", d=" + std::to_string(d) +
                                " needs " + std::to_string(nq * d) + ", " + std::to_string(n * d) + ", " +
                                std::to_string(n * d) + " (and d > 0)");
}

KVQ_HD inline void store_status(std::uint8_t* s, attention::query_status st) {
  s[0] = st.nonfinite_scores ? 1 : 0;
  s[1] = st.nonfinite_output ? 1 : 0;
}

struct reference_fn {
  const float *q, *k, *v;
  std::size_t n, d, scratch;
  double *p, *o, *work;
  std::uint8_t* status;
  KVQ_HD void operator()(std::size_t i) const {
    const attention::rows_view<float> K{k, n, d, d}, V{v, n, d, d};
    double* acc = work + i * scratch;
    const auto st = attention::reference_query(q + i * d, K, V, p + i * n, o + i * d, acc,
                                               acc + attention::pv_scratch(n, d));
    store_status(status + 2 * i, st);
  }
};

struct storage_fn {
  const float *q, *k, *v;
  std::size_t n, d, scratch;
  float scale;
  bool bf16;
  double* p;
  float *o, *work;
  std::uint8_t* status;
  KVQ_HD void operator()(std::size_t i) const {
    const attention::rows_view<float> K{k, n, d, d}, V{v, n, d, d};
    float* s = work + i * scratch;
    float* acc = s + n;
    float* tmp = acc + attention::pv_scratch(n, d);
    const auto st = attention::storage_query(q + i * d, K, V, scale, bf16, p + i * n, o + i * d, s, acc, tmp);
    store_status(status + 2 * i, st);
  }
};

template <class F>
struct fa3_fn {
  const float *q, *k, *v;
  std::size_t n, d, scratch;
  attention::fa3_config c;
  double* p;
  float *o, *work;
  std::uint8_t* status;
  KVQ_HD void operator()(std::size_t i) const {
    const attention::rows_view<float> K{k, n, d, d}, V{v, n, d, d};
    const auto st = attention::fa3_query<F>(q + i * d, K, V, c, p + i * n, o + i * d, work + i * scratch);
    store_status(status + 2 * i, st);
  }
};

inline thrust::counting_iterator<std::size_t> idx(std::size_t i) { return thrust::counting_iterator<std::size_t>(i); }

}  // namespace detail

/// Double-precision reference attention for nq queries: P = softmax(Q K^T / sqrt(d)), O = P V.
/// (FloatVec: thrust::device_vector<float>; a template so that the kernel is compiled only
/// where it is used.)
/// \throws std::invalid_argument if d = 0 or Q, K, V do not hold nq x d, n x d, n x d
///         values.
template <class FloatVec>
void reference_attention(const FloatVec& Q, const FloatVec& K, const FloatVec& V, std::size_t nq, std::size_t n,
                         std::size_t d,
                                thrust::device_vector<double>& P, thrust::device_vector<double>& O,
                                thrust::device_vector<std::uint8_t>& status) {
  static_assert(std::is_same<typename FloatVec::value_type, float>::value, "kvq::device: Q, K, V hold floats");
  detail::check_attention_sizes("reference_attention", Q.size(), K.size(), V.size(), nq, n, d);
  const std::size_t scratch = attention::pv_scratch(n, d) + d;
  thrust::device_vector<double> work(nq * scratch);
  P.resize(nq * n);
  O.resize(nq * d);
  status.resize(nq * 2);
  thrust::for_each(detail::idx(0), detail::idx(nq),
                   detail::reference_fn{thrust::raw_pointer_cast(Q.data()), thrust::raw_pointer_cast(K.data()),
                                        thrust::raw_pointer_cast(V.data()), n, d, scratch,
                                        thrust::raw_pointer_cast(P.data()), thrust::raw_pointer_cast(O.data()),
                                        thrust::raw_pointer_cast(work.data()), thrust::raw_pointer_cast(status.data())});
}

/// Storage-only emulation (fp32 math, or bf16 with q/K/V already rounded to bf16) over
/// dequantized K/V; `scale` multiplies q.k (usually 1/sqrt(d)).
/// \throws std::invalid_argument if d = 0 or Q, K, V do not hold nq x d, n x d, n x d
///         values.
template <class FloatVec>
void storage_attention(const FloatVec& Q, const FloatVec& K, const FloatVec& V, std::size_t nq, std::size_t n,
                       std::size_t d,
                              float scale, bool bf16, thrust::device_vector<double>& P_eff,
                              thrust::device_vector<float>& O, thrust::device_vector<std::uint8_t>& status) {
  static_assert(std::is_same<typename FloatVec::value_type, float>::value, "kvq::device: Q, K, V hold floats");
  detail::check_attention_sizes("storage_attention", Q.size(), K.size(), V.size(), nq, n, d);
  const std::size_t scratch = n + attention::pv_scratch(n, d) + d;
  thrust::device_vector<float> work(nq * scratch);
  P_eff.resize(nq * n);
  O.resize(nq * d);
  status.resize(nq * 2);
  thrust::for_each(detail::idx(0), detail::idx(nq),
                   detail::storage_fn{thrust::raw_pointer_cast(Q.data()), thrust::raw_pointer_cast(K.data()),
                                      thrust::raw_pointer_cast(V.data()), n, d, scratch, scale, bf16,
                                      thrust::raw_pointer_cast(P_eff.data()), thrust::raw_pointer_cast(O.data()),
                                      thrust::raw_pointer_cast(work.data()), thrust::raw_pointer_cast(status.data())});
}

/// FlashAttention-3 FP8 forward emulation; Q/K/V hold values of the FP8 format F
/// (decoded to float).
/// \throws std::invalid_argument if d = 0, Q, K, V do not hold nq x d, n x d, n x d
///         values, or c.block_n = 0.
template <class F, class FloatVec>
void fa3_attention(const FloatVec& Q, const FloatVec& K, const FloatVec& V, std::size_t nq, std::size_t n,
                   std::size_t d,
                   const attention::fa3_config& c, thrust::device_vector<double>& P_eff,
                   thrust::device_vector<float>& O, thrust::device_vector<std::uint8_t>& status) {
  static_assert(std::is_same<typename FloatVec::value_type, float>::value, "kvq::device: Q, K, V hold floats");
  detail::check_attention_sizes("fa3_attention", Q.size(), K.size(), V.size(), nq, n, d);
  if (c.block_n == 0) throw std::invalid_argument("kvq::device::fa3_attention: block_n is 0");
  const std::size_t scratch = attention::fa3_scratch(n, d, c.block_n);
  thrust::device_vector<float> work(nq * scratch);
  P_eff.resize(nq * n);
  O.resize(nq * d);
  status.resize(nq * 2);
  thrust::for_each(detail::idx(0), detail::idx(nq),
                   detail::fa3_fn<F>{thrust::raw_pointer_cast(Q.data()), thrust::raw_pointer_cast(K.data()),
                                     thrust::raw_pointer_cast(V.data()), n, d, scratch, c,
                                     thrust::raw_pointer_cast(P_eff.data()), thrust::raw_pointer_cast(O.data()),
                                     thrust::raw_pointer_cast(work.data()), thrust::raw_pointer_cast(status.data())});
}

}  // namespace device
}  // namespace kvq
