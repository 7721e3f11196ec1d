/// \file
/// kvq/compact/dense_solve.hpp — the dense linear algebra of the compaction fits, in a
/// fixed order: a Euclidean norm, an LDL^T solve of a symmetric positive definite
/// system and a least-squares solve by Householder QR with column pivoting.
///
/// Why not Eigen's decompositions: their inner products and rank-1 updates run through
/// Eigen's vectorised kernels, whose packet width (SSE2, AVX, AVX-512) and use of fused
/// multiply-adds depend on the target flags, so the same fit gave different bits in a
/// -march=native build and a portable one (the fit residuals of the compaction study
/// differed in the 15th digit). Here every sum runs over ascending indices with
/// separate multiplies and adds, so the bits depend only on the input; the test
/// cli_study_scalar_bits compares a -march=native build with one that has no target
/// flags and Eigen's vectorisation switched off.
///
/// The algorithms are the textbook ones (G. H. Golub, C. F. Van Loan, "Matrix
/// Computations", 4th ed.: LDL^T, algorithm 4.1.2; Householder QR with column pivoting,
/// algorithm 5.4.1, with the reflector of LAPACK's dlarfg). Host only.
#pragma once

#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <utility>
#include <vector>

#include <Eigen/Core>

#include <kvq/compact/types.hpp>

namespace kvq {
namespace compact {

/// The sum of squares of the coefficients of `e` in storage order (ascending), the
/// fixed-order replacement for Eigen's squaredNorm().
template <class Derived>
double fixed_squared_norm(const Eigen::MatrixBase<Derived>& e) {
  const typename Derived::PlainObject v = e;
  double acc = 0.0;
  const double* p = v.data();
  for (Eigen::Index i = 0; i < v.size(); ++i) acc += p[i] * p[i];
  return acc;
}

/// sqrt(fixed_squared_norm(e)), the fixed-order replacement for Eigen's norm().
template <class Derived>
double fixed_norm(const Eigen::MatrixBase<Derived>& e) {
  return std::sqrt(fixed_squared_norm(e));
}

/// Solves G x = rhs for a symmetric positive definite G (k x k) by LDL^T without
/// pivoting. Returns false, leaving x unspecified, when a pivot d_j is not positive or
/// not finite (G not numerically positive definite): the caller then needs a
/// rank-revealing solve (solve_least_squares_qr).
/// \throws std::invalid_argument if G is not square or rhs has another length.
inline bool solve_spd_ldlt(const matrix_d& g, const fit_vector& rhs, fit_vector& x) {
  const Eigen::Index k = g.rows();
  if (g.cols() != k) throw std::invalid_argument("compact::solve_spd_ldlt: G is not square");
  if (rhs.size() != k) throw std::invalid_argument("compact::solve_spd_ldlt: rhs length differs from G's order");
  const std::size_t n = static_cast<std::size_t>(k);
  std::vector<double> l(n * n, 0.0), d(n, 0.0);  // L row-major, unit diagonal implied
  for (std::size_t j = 0; j < n; ++j) {
    double dj = g(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(j));
    for (std::size_t p = 0; p < j; ++p) dj -= l[j * n + p] * l[j * n + p] * d[p];
    if (!(dj > 0.0) || !std::isfinite(dj)) return false;
    d[j] = dj;
    for (std::size_t i = j + 1; i < n; ++i) {
      double s = g(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
      for (std::size_t p = 0; p < j; ++p) s -= l[i * n + p] * l[j * n + p] * d[p];
      l[i * n + j] = s / dj;
    }
  }
  x.resize(k);
  for (std::size_t i = 0; i < n; ++i) {  // L y = rhs
    double s = rhs(static_cast<Eigen::Index>(i));
    for (std::size_t p = 0; p < i; ++p) s -= l[i * n + p] * x(static_cast<Eigen::Index>(p));
    x(static_cast<Eigen::Index>(i)) = s;
  }
  for (std::size_t i = 0; i < n; ++i) x(static_cast<Eigen::Index>(i)) /= d[i];  // D z = y
  for (std::size_t ii = n; ii-- > 0;) {  // L^T x = z
    double s = x(static_cast<Eigen::Index>(ii));
    for (std::size_t p = ii + 1; p < n; ++p) s -= l[p * n + ii] * x(static_cast<Eigen::Index>(p));
    x(static_cast<Eigen::Index>(ii)) = s;
  }
  for (std::size_t i = 0; i < n; ++i)
    if (!std::isfinite(x(static_cast<Eigen::Index>(i)))) return false;
  return true;
}

/// A least-squares solution by column-pivoting QR.
struct qr_solution {
  matrix_d x;    ///< n x p: the basic solution (0 at the columns beyond the rank)
  int rank = 0;  ///< pivots with |R_kk| > eps * min(m, n) * |R_00|
};

/// min ||A X - B||_F for A (m x n) and B (m x p) by Householder QR with column pivoting
/// (at step k the remaining column of largest norm, the lowest index on ties). Columns
/// beyond the numerical rank (|R_kk| <= eps * min(m, n) * |R_00|, the threshold Eigen's
/// ColPivHouseholderQR uses by default) get 0: the basic solution.
/// \throws std::invalid_argument if A and B have different row counts.
inline qr_solution solve_least_squares_qr(const matrix_d& a_in, const matrix_d& b_in) {
  if (a_in.rows() != b_in.rows())
    throw std::invalid_argument("compact::solve_least_squares_qr: A and B have different row counts");
  const std::size_t m = static_cast<std::size_t>(a_in.rows()), n = static_cast<std::size_t>(a_in.cols()),
                    p = static_cast<std::size_t>(b_in.cols());
  // Column-major copies: every reflection walks down columns.
  std::vector<double> a(m * n), b(m * p);
  for (std::size_t j = 0; j < n; ++j)
    for (std::size_t i = 0; i < m; ++i) a[j * m + i] = a_in(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
  for (std::size_t j = 0; j < p; ++j)
    for (std::size_t i = 0; i < m; ++i) b[j * m + i] = b_in(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j));
  std::vector<std::size_t> perm(n);
  for (std::size_t j = 0; j < n; ++j) perm[j] = j;
  const std::size_t steps = m < n ? m : n;
  std::vector<double> rdiag(steps, 0.0);
  // Applies I - tau v v^T (v[0] = 1 at row k, v[i] at a[col_k + i] below) to column c of M.
  auto reflect = [m](const double* v, std::size_t k, double tau, double* col) {
    double w = col[k];
    for (std::size_t i = k + 1; i < m; ++i) w += v[i] * col[i];
    const double tw = tau * w;
    col[k] -= tw;
    for (std::size_t i = k + 1; i < m; ++i) col[i] -= tw * v[i];
  };
  for (std::size_t k = 0; k < steps; ++k) {
    // The pivot: the largest remaining column norm, recomputed (no downdating).
    std::size_t best = k;
    double best_norm = -1.0;
    for (std::size_t j = k; j < n; ++j) {
      double s = 0.0;
      for (std::size_t i = k; i < m; ++i) s += a[j * m + i] * a[j * m + i];
      if (s > best_norm) {
        best_norm = s;
        best = j;
      }
    }
    if (best != k) {
      for (std::size_t i = 0; i < m; ++i) std::swap(a[k * m + i], a[best * m + i]);
      std::swap(perm[k], perm[best]);
    }
    double* col = &a[k * m];
    const double alpha = col[k];
    double sigma = 0.0;
    for (std::size_t i = k + 1; i < m; ++i) sigma += col[i] * col[i];
    if (sigma == 0.0) {  // nothing below the diagonal: H = I
      rdiag[k] = alpha;
      continue;
    }
    const double xnorm = std::sqrt(alpha * alpha + sigma);
    const double beta = alpha >= 0.0 ? -xnorm : xnorm;
    const double tau = (beta - alpha) / beta;
    const double scale = 1.0 / (alpha - beta);
    for (std::size_t i = k + 1; i < m; ++i) col[i] *= scale;
    col[k] = beta;
    rdiag[k] = beta;
    for (std::size_t j = k + 1; j < n; ++j) reflect(col, k, tau, &a[j * m]);
    for (std::size_t j = 0; j < p; ++j) reflect(col, k, tau, &b[j * m]);
  }
  qr_solution s;
  const double r00 = steps > 0 ? std::fabs(rdiag[0]) : 0.0;
  const double thresh = std::numeric_limits<double>::epsilon() * static_cast<double>(steps) * r00;
  std::size_t rank = 0;
  while (rank < steps && std::fabs(rdiag[rank]) > thresh) ++rank;
  s.rank = static_cast<int>(rank);
  s.x = matrix_d::Zero(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(p));
  std::vector<double> z(rank);
  for (std::size_t c = 0; c < p; ++c) {
    for (std::size_t ii = rank; ii-- > 0;) {  // R z = (Q^T B)_{0..rank}
      double v = b[c * m + ii];
      for (std::size_t j = ii + 1; j < rank; ++j) v -= a[j * m + ii] * z[j];
      z[ii] = v / rdiag[ii];
    }
    for (std::size_t k = 0; k < rank; ++k)
      s.x(static_cast<Eigen::Index>(perm[k]), static_cast<Eigen::Index>(c)) = z[k];
  }
  return s;
}

}  // namespace compact
}  // namespace kvq
