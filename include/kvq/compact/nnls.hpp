/// \file
/// kvq/compact/nnls.hpp — non-negative least squares, min ||A x - b||_2 s.t. x >= 0,
/// by the Lawson-Hanson active-set method (C. L. Lawson, R. J. Hanson, "Solving Least
/// Squares Problems", 1974, ch. 23, algorithm NNLS), and its bounded form
/// lower <= x <= upper (bvls, at the end of the file).
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
/// with G = A^T A formed once, by LDL^T (falling back to column-pivoting Householder QR,
/// rank-revealing, when the block is numerically not positive definite; both in
/// compact/dense_solve.hpp, fixed order). Forming
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

#include <kvq/compact/dense_solve.hpp>
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

// The rank-revealing fallback for a passive-set block that is not numerically positive
// definite: the basic least-squares solution of G z = rhs.
inline fit_vector solve_by_qr(const matrix_d& g, const fit_vector& rhs) {
  matrix_d r(rhs.size(), 1);
  for (Eigen::Index i = 0; i < rhs.size(); ++i) r(i, 0) = rhs(i);
  const matrix_d z = solve_least_squares_qr(g, r).x;
  fit_vector out(z.rows());
  for (Eigen::Index i = 0; i < z.rows(); ++i) out(i) = z(i, 0);
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
  return 10.0 * eps * static_cast<double>(std::max(a.rows(), a.cols())) * fixed_norm(a) * fixed_norm(b);
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
    fit_vector zp;
    if (!solve_spd_ldlt(gp, rhs, zp)) zp = detail::solve_by_qr(gp, rhs);
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
  res.residual_norm = fixed_norm(detail::times(a, res.x) - b);
  return res;
}

/// Solution of a box-constrained least-squares problem (bvls).
struct bvls_result {
  fit_vector x;                ///< the solution, lower <= x <= upper
  double residual_norm = 0.0;  ///< ||A x - b||_2 (0 from bvls_normal, which has no A)
  int iterations = 0;          ///< outer iterations (variables freed from a bound)
  bool converged = false;      ///< false: stopped at the iteration limit
  int at_lower = 0;            ///< entries exactly at the lower bound
  int at_upper = 0;            ///< entries exactly at the upper bound
};

/// Bounded-variable least squares on the normal equations: min ||A x - b||_2 subject to
/// lower <= x_j <= upper for every j, with G = A^T A (n x n) and atb = A^T b.
///
/// The active-set method of Stark and Parker ("Bounded-variable least-squares: an
/// algorithm and applications", Computational Statistics 10, 1995), the two-sided form
/// of Lawson-Hanson: every variable is at its lower bound, at its upper bound, or free.
///
///   start: every x_j at the lower bound (or the warm start, clipped into the box)
///   while some bound j violates its KKT sign (w = atb - G x; at lower: w_j > tol,
///         at upper: w_j < -tol): free the one with the largest |w_j| (ties: lowest j)
///     loop: z = the unconstrained least-squares solution on the free set, the bound
///           variables held at their bounds; if lower < z_F < upper: x = z, break
///           step from x toward z as far as the box allows; every free variable that
///           reached a bound (the limiting one always) is fixed there
///
/// At the optimum of this convex problem (KKT): w_j = 0 on the free set, w_j <= 0 at
/// the lower bound, w_j >= 0 at the upper bound. Bound entries are set to the bound
/// values exactly, so at_lower / at_upper count them exactly. The subproblems are
/// solved as in nnls_normal (LDLT, falling back to column-pivoting QR); everything runs
/// in a fixed order: deterministic.
/// max_iterations <= 0: 10 n.
/// \throws std::invalid_argument if g_full is not square with atb's size, has no
///         columns, the warm start has the wrong size, lower is not finite, or upper is
///         not above lower (NaN included).
inline bvls_result bvls_normal(const matrix_d& g_full, const fit_vector& atb, double lower, double upper,
                               int max_iterations, double tol, const fit_vector* start = nullptr) {
  const Eigen::Index n = g_full.cols();
  if (g_full.rows() != n || atb.size() != n)
    throw std::invalid_argument("compact: bounded least-squares normal equations disagree");
  if (n < 1) throw std::invalid_argument("compact: bounded least-squares system has no columns");
  if (start && start->size() != n)
    throw std::invalid_argument("compact: bounded least-squares warm start has the wrong size");
  if (!std::isfinite(lower)) throw std::invalid_argument("compact: bounded least squares: lower bound is not finite");
  if (!(upper > lower))
    throw std::invalid_argument("compact: bounded least squares: upper bound " + std::to_string(upper) +
                                " is not above the lower bound " + std::to_string(lower));
  if (max_iterations <= 0) max_iterations = static_cast<int>(10 * n);

  bvls_result res;
  res.x = fit_vector::Constant(n, lower);
  // -1: at the lower bound, +1: at the upper bound, 0: free.
  std::vector<signed char> state(static_cast<std::size_t>(n), -1);
  auto st = [&](Eigen::Index j) -> signed char& { return state[static_cast<std::size_t>(j)]; };

  auto settle = [&]() {
    for (Eigen::Index inner = 0; inner <= n; ++inner) {
      std::vector<Eigen::Index> idx;
      for (Eigen::Index j = 0; j < n; ++j)
        if (st(j) == 0) idx.push_back(j);
      const auto k = static_cast<Eigen::Index>(idx.size());
      if (k == 0) return;
      matrix_d gp(k, k);
      fit_vector rhs(k);
      for (Eigen::Index r = 0; r < k; ++r) {
        const Eigen::Index jr = idx[static_cast<std::size_t>(r)];
        // The bound variables' share moves to the right-hand side (ascending j).
        double acc = atb(jr);
        for (Eigen::Index j = 0; j < n; ++j)
          if (st(j) != 0) acc -= g_full(jr, j) * res.x(j);
        rhs(r) = acc;
        for (Eigen::Index c = 0; c < k; ++c) gp(r, c) = g_full(jr, idx[static_cast<std::size_t>(c)]);
      }
      fit_vector zp;
      if (!solve_spd_ldlt(gp, rhs, zp)) zp = detail::solve_by_qr(gp, rhs);
      bool inside = true;
      for (Eigen::Index r = 0; r < k; ++r)
        if (!(zp(r) > lower && zp(r) < upper)) inside = false;
      if (inside) {
        for (Eigen::Index r = 0; r < k; ++r) res.x(idx[static_cast<std::size_t>(r)]) = zp(r);
        return;
      }
      // The longest step toward z that stays in the box; its limiting variable is fixed
      // at the bound it reached even if rounding left it a hair inside.
      double alpha = std::numeric_limits<double>::infinity();
      Eigen::Index limit = -1;
      signed char limit_side = 0;
      for (Eigen::Index r = 0; r < k; ++r) {
        const Eigen::Index j = idx[static_cast<std::size_t>(r)];
        const double xj = res.x(j), zj = zp(r);
        double step = std::numeric_limits<double>::infinity();
        signed char side = 0;
        if (!(zj > lower)) {
          step = xj > lower ? (xj - lower) / (xj - zj) : 0.0;
          side = -1;
        } else if (!(zj < upper)) {
          step = xj < upper ? (upper - xj) / (zj - xj) : 0.0;
          side = 1;
        }
        if (side != 0 && (step < alpha || limit < 0)) {
          alpha = step;
          limit = j;
          limit_side = side;
        }
      }
      if (!(alpha >= 0.0) || !std::isfinite(alpha)) alpha = 0.0;
      if (alpha > 1.0) alpha = 1.0;
      for (Eigen::Index r = 0; r < k; ++r) {
        const Eigen::Index j = idx[static_cast<std::size_t>(r)];
        res.x(j) += alpha * (zp(r) - res.x(j));
        if (j == limit || !(res.x(j) > lower) || !(res.x(j) < upper)) {
          const bool low = j == limit ? limit_side < 0 : !(res.x(j) > lower);
          st(j) = low ? -1 : 1;
          res.x(j) = low ? lower : upper;
        }
      }
    }
  };

  if (start) {
    bool any = false;
    for (Eigen::Index j = 0; j < n; ++j) {
      const double v = (*start)(j);
      if (v > lower && v < upper) {
        st(j) = 0;
        res.x(j) = v;
        any = true;
      } else if (v >= upper) {
        st(j) = 1;
        res.x(j) = upper;
      }
    }
    if (any) settle();
  }

  auto violator = [&]() -> Eigen::Index {
    const fit_vector w = atb - detail::times(g_full, res.x);
    Eigen::Index best = -1;
    double best_v = 0.0;
    for (Eigen::Index j = 0; j < n; ++j) {
      const double v = st(j) < 0 ? w(j) : st(j) > 0 ? -w(j) : 0.0;
      if (v > tol && (best < 0 || v > best_v)) {
        best = j;
        best_v = v;
      }
    }
    return best;
  };
  while (res.iterations < max_iterations) {
    const Eigen::Index j = violator();
    if (j < 0) {
      res.converged = true;
      break;
    }
    ++res.iterations;
    st(j) = 0;
    settle();
  }
  if (!res.converged) res.converged = violator() < 0;
  for (Eigen::Index j = 0; j < n; ++j) {
    res.at_lower += st(j) < 0;
    res.at_upper += st(j) > 0;
  }
  return res;
}

/// Bounded-variable least squares, min ||A x - b||_2 s.t. lower <= x <= upper (see
/// bvls_normal). max_iterations <= 0: 10 n. tolerance < 0: nnls_default_tolerance.
/// \throws std::invalid_argument if a.rows() != b.size(), a has no columns, or the
///         bounds are invalid (lower not finite, upper not above lower).
inline bvls_result bvls(const matrix_d& a, const fit_vector& b, double lower, double upper, int max_iterations = 0,
                        double tolerance = -1.0) {
  if (a.rows() != b.size())
    throw std::invalid_argument("compact: bounded least-squares system has " + std::to_string(a.rows()) +
                                " rows but " + std::to_string(b.size()) + " right-hand sides");
  if (a.cols() < 1) throw std::invalid_argument("compact: bounded least-squares system has no columns");
  const double tol = tolerance < 0.0 ? nnls_default_tolerance(a, b) : tolerance;
  bvls_result res = bvls_normal(detail::gram(a), detail::transpose_times(a, b), lower, upper, max_iterations, tol);
  res.residual_norm = fixed_norm(detail::times(a, res.x) - b);
  return res;
}

}  // namespace compact
}  // namespace kvq
