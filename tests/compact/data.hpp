// Test data for the compaction tests: Gaussian matrices from Philox (Box-Muller), so
// the data depends only on the seed, not on the standard library's distributions.
#pragma once

#include <kvq/core/math.hpp>
#include <cmath>
#include <cstdint>
#include <vector>

#include <kvq/compact/types.hpp>
#include <kvq/inject/philox.hpp>

namespace kvq_test_compact {

using kvq::matrix_f;

inline double uniform01(std::uint64_t seed, std::uint64_t stream, std::uint64_t index, int word) {
  const kvq::inject::u32x4 r = kvq::inject::philox_block(seed, stream, index);
  return (static_cast<double>(r.v[word]) + 0.5) / 4294967296.0;
}

inline double gaussian(std::uint64_t seed, std::uint64_t stream, std::uint64_t index) {
  const double u1 = uniform01(seed, stream, index, 0), u2 = uniform01(seed, stream, index, 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

inline matrix_f gaussian_matrix(Eigen::Index rows, Eigen::Index cols, std::uint64_t seed, std::uint64_t stream,
                                   double scale = 1.0) {
  matrix_f m(rows, cols);
  for (Eigen::Index r = 0; r < rows; ++r)
    for (Eigen::Index c = 0; c < cols; ++c)
      m(r, c) = static_cast<float>(scale * gaussian(seed, stream, static_cast<std::uint64_t>(r * cols + c)));
  return m;
}

// Independent straightforward reference softmax attention of one query (double), with
// optional biases: the order documented in kvq/compact/reference.hpp, written out here
// without any of the library's helpers.
inline std::vector<double> plain_attention(const matrix_f& k, const matrix_f& v, const float* q,
                                           const std::vector<float>& beta, std::vector<double>* weights = nullptr) {
  const auto n = static_cast<std::size_t>(k.rows());
  const auto d = static_cast<std::size_t>(k.cols());
  std::vector<double> s(n);
  for (std::size_t t = 0; t < n; ++t) {
    double dot = 0.0;
    for (std::size_t c = 0; c < d; ++c)
      dot += static_cast<double>(q[c]) * static_cast<double>(k(static_cast<Eigen::Index>(t), static_cast<Eigen::Index>(c)));
    s[t] = dot / std::sqrt(static_cast<double>(d)) + (beta.empty() ? 0.0 : static_cast<double>(beta[t]));
  }
  double mx = s[0];
  for (double x : s) mx = x > mx ? x : mx;
  double z = 0.0;
  for (std::size_t t = 0; t < n; ++t) {
    s[t] = kvq::math::exp(s[t] - mx);  // the evaluator's exp (tested in tests/core)
    z += s[t];
  }
  for (double& x : s) x /= z;
  std::vector<double> o(d, 0.0);
  for (std::size_t c = 0; c < d; ++c)
    for (std::size_t t = 0; t < n; ++t)
      o[c] += s[t] * static_cast<double>(v(static_cast<Eigen::Index>(t), static_cast<Eigen::Index>(c)));
  if (weights) *weights = s;
  return o;
}

}  // namespace kvq_test_compact
