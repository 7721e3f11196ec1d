/// \file
/// kvq/compact/nnls.hpp — non-negative least squares, min ||A x - b||_2 s.t. x >= 0,
/// by the Lawson-Hanson active-set method (C. L. Lawson, R. J. Hanson, "Solving Least
/// Squares Problems", 1974, ch. 23, algorithm NNLS).
///
///   P = {}, x = 0, g = A^T (b - A x)
///   while some j outside P has g_j > tol:
///     move the j with the largest g_j (ties: lowest j) into P
///     loop: z = argmin ||A_P z - b|| (unconstrained on P, 0 elsewhere)
///           if z_P > 0: x = z, break
///           alpha = min over j in P with z_j <= 0 of x_j / (x_j - z_j)
///           x += alpha (z - x); move every j in P with x_j <= 0 back out (x_j = 0)
///     g = A^T (b - A x)
///
/// The passive-set subproblems are solved on the normal equations G_PP z = (A^T b)_P
/// with G = A^T A formed once, by LDLT (falling back to column-pivoting Householder QR,
/// rank-revealing, when the block is numerically not positive definite). Forming
/// G squares the condition number; the result's residual is reported so a caller can
/// see an inaccurate fit. Everything runs in a fixed order: deterministic.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include <kvq/compact/types.hpp>

namespace kvq {
namespace compact {

namespace detail {

// Fixed-order products (ascending summation index): Eigen's GEMM blocking depends on
// the detected cache sizes, so its summation order may differ between machines.
// (Raw row-major pointers: the same order as element access, without Eigen's
// per-element call overhead in unoptimised builds.)
inline matrix_d gram(const matrix_d& a) {
  const Eigen::Index m = a.rows(), n = a.cols();
  const double* p = a.data();
  matrix_d g(n, n);
  for (Eigen::Index r = 0; r < n; ++r)
    for (Eigen::Index c = r; c < n; ++c) {
      double acc = 0.0;
      for (Eigen::Index i = 0; i < m; ++i) acc += p[i * n + r] * p[i * n + c];
      g(r, c) = acc;
      g(c, r) = acc;
    }
  return g;
}

inline fit_vector transpose_times(const matrix_d& a, const fit_vector& v) {
  const Eigen::Index m = a.rows(), n = a.cols();
  const double* p = a.data();
  const double* pv = v.data();
  fit_vector out(n);
  for (Eigen::Index c = 0; c < n; ++c) {
    double acc = 0.0;
    for (Eigen::Index i = 0; i < m; ++i) acc += p[i * n + c] * pv[i];
    out(c) = acc;
  }
  return out;
}

inline fit_vector times(const matrix_d& a, const fit_vector& x) {
  const Eigen::Index m = a.rows(), n = a.cols();
  const double* p = a.data();
  const double* px = x.data();
  fit_vector out(m);
  for (Eigen::Index i = 0; i < m; ++i) {
    double acc = 0.0;
    for (Eigen::Index c = 0; c < n; ++c) acc += p[i * n + c] * px[c];
    out(i) = acc;
  }
  return out;
}

}  // namespace detail

/// Solution of a non-negative least-squares problem.
struct nnls_result {
  fit_vector x;                ///< the solution, x >= 0
  double residual_norm = 0.0;  ///< ||A x - b||_2
  int iterations = 0;          ///< outer iterations (columns moved into P)
  bool converged = false;      ///< false: stopped at the iteration limit
};

/// The default dual-feasibility tolerance: 10 * eps * max(m, n) * ||A||_F * ||b||_2.
inline double nnls_default_tolerance(const matrix_d& a, const fit_vector& b) {
  const double eps = std::numeric_limits<double>::epsilon();
  return 10.0 * eps * static_cast<double>(std::max(a.rows(), a.cols())) * a.norm() * b.norm();
}

/// Lawson-Hanson NNLS on the normal equations: G = A^T A (n x n), atb = A^T b.
/// `start` (optional, x >= 0): a warm start; its positive entries form the initial
/// passive set and are made feasible-optimal first (the inner loop), as when a caller
/// adds columns to a problem it has solved (OMP). residual_norm is left 0: it needs A.
/// \throws std::invalid_argument if g_full is not square with atb's size, has no
///         columns, or the warm start has the wrong size.
inline nnls_result nnls_normal(const matrix_d& g_full, const fit_vector& atb, int max_iterations, double tol,
                               const fit_vector* start = nullptr) {
  const Eigen::Index n = g_full.cols();
  if (g_full.rows() != n || atb.size() != n) throw std::invalid_argument("compact: NNLS normal equations disagree");
  if (n < 1) throw std::invalid_argument("compact: NNLS system has no columns");
  if (start && start->size() != n) throw std::invalid_argument("compact: NNLS warm start has the wrong size");
  if (max_iterations <= 0) max_iterations = static_cast<int>(3 * n);

  nnls_result res;
  res.x = fit_vector::Zero(n);
  std::vector<char> passive(static_cast<std::size_t>(n), 0);
  auto gradient = [&](const fit_vector& x) -> fit_vector { return atb - detail::times(g_full, x); };

  // Unconstrained LS on the passive set, as a full-length vector (0 outside P).
  auto solve_passive = [&]() -> fit_vector {
    std::vector<Eigen::Index> idx;
    for (Eigen::Index j = 0; j < n; ++j)
      if (passive[static_cast<std::size_t>(j)]) idx.push_back(j);
    const auto k = static_cast<Eigen::Index>(idx.size());
    matrix_d gp(k, k);
    fit_vector rhs(k);
    for (Eigen::Index r = 0; r < k; ++r) {
      rhs(r) = atb(idx[static_cast<std::size_t>(r)]);
      for (Eigen::Index c = 0; c < k; ++c)
        gp(r, c) = g_full(idx[static_cast<std::size_t>(r)], idx[static_cast<std::size_t>(c)]);
    }
    // Cholesky (LDLT) of the SPD block first; a block that is numerically not positive
    // definite (dependent columns) goes to rank-revealing QR for a basic solution.
    const Eigen::LDLT<matrix_d> ldlt(gp);
    fit_vector zp;
    if (ldlt.info() == Eigen::Success && ldlt.isPositive()) zp = ldlt.solve(rhs);
    if (zp.size() != k || !zp.allFinite()) zp = Eigen::ColPivHouseholderQR<matrix_d>(gp).solve(rhs);
    fit_vector z = fit_vector::Zero(n);
    for (Eigen::Index r = 0; r < k; ++r) z(idx[static_cast<std::size_t>(r)]) = zp(r);
    return z;
  };

  // The inner loop: from a feasible x with x_P > 0, the LS solution on P, stepping back
  // toward x and shrinking P until that solution is positive on P.
  auto settle = [&]() {
    for (Eigen::Index inner = 0; inner <= n; ++inner) {
      bool any = false;
      for (Eigen::Index j = 0; j < n; ++j) any = any || passive[static_cast<std::size_t>(j)];
      if (!any) {
        res.x.setZero();
        return;
      }
      const fit_vector z = solve_passive();
      bool feasible = true;
      for (Eigen::Index j = 0; j < n; ++j)
        if (passive[static_cast<std::size_t>(j)] && !(z(j) > 0.0)) feasible = false;
      if (feasible) {
        res.x = z;
        return;
      }
      double alpha = std::numeric_limits<double>::infinity();
      for (Eigen::Index j = 0; j < n; ++j)
        if (passive[static_cast<std::size_t>(j)] && !(z(j) > 0.0)) {
          const double step = res.x(j) / (res.x(j) - z(j));
          if (step < alpha) alpha = step;
        }
      if (!(alpha >= 0.0) || !std::isfinite(alpha)) alpha = 0.0;
      res.x += alpha * (z - res.x);
      for (Eigen::Index j = 0; j < n; ++j)
        if (passive[static_cast<std::size_t>(j)] && !(res.x(j) > 0.0)) {
          passive[static_cast<std::size_t>(j)] = 0;
          res.x(j) = 0.0;
        }
    }
  };

  if (start) {
    for (Eigen::Index j = 0; j < n; ++j)
      if ((*start)(j) > 0.0) {
        passive[static_cast<std::size_t>(j)] = 1;
        res.x(j) = (*start)(j);
      }
    settle();
  }

  fit_vector w = gradient(res.x);
  while (res.iterations < max_iterations) {
    Eigen::Index best = -1;
    for (Eigen::Index j = 0; j < n; ++j)
      if (!passive[static_cast<std::size_t>(j)] && w(j) > tol && (best < 0 || w(j) > w(best))) best = j;
    if (best < 0) {
      res.converged = true;
      break;
    }
    ++res.iterations;
    passive[static_cast<std::size_t>(best)] = 1;
    settle();
    w = gradient(res.x);
  }
  if (!res.converged) {
    // One last dual-feasibility check: the limit may coincide with convergence.
    bool any = false;
    for (Eigen::Index j = 0; j < n; ++j)
      if (!passive[static_cast<std::size_t>(j)] && w(j) > tol) any = true;
    res.converged = !any;
  }
  return res;
}

/// Lawson-Hanson NNLS. max_iterations <= 0: 3 n. tolerance < 0: the default.
/// \throws std::invalid_argument if a.rows() != b.size() or a has no columns.
inline nnls_result nnls(const matrix_d& a, const fit_vector& b, int max_iterations = 0, double tolerance = -1.0) {
  if (a.rows() != b.size())
    throw std::invalid_argument("compact: NNLS system has " + std::to_string(a.rows()) + " rows but " +
                                std::to_string(b.size()) + " right-hand sides");
  if (a.cols() < 1) throw std::invalid_argument("compact: NNLS system has no columns");
  const double tol = tolerance < 0.0 ? nnls_default_tolerance(a, b) : tolerance;
  nnls_result res = nnls_normal(detail::gram(a), detail::transpose_times(a, b), max_iterations, tol);
  res.residual_norm = (detail::times(a, res.x) - b).norm();
  return res;
}

}  // namespace compact
}  // namespace kvq
