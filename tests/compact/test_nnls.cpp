// Lawson-Hanson NNLS against an exhaustive search over supports (small problems) and
// the KKT conditions (larger ones).
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include <Eigen/Dense>
#include <catch2/catch.hpp>

#include <kvq/compact/nnls.hpp>

#include "data.hpp"

using namespace kvq::compact;
using kvq::matrix_d;
using kvq::matrix_f;
using kvq_test_compact::gaussian;
using kvq_test_compact::uniform01;

namespace {

matrix_d gaussian_system(Eigen::Index m, Eigen::Index n, std::uint64_t seed) {
  matrix_d a(m, n);
  for (Eigen::Index i = 0; i < m; ++i)
    for (Eigen::Index j = 0; j < n; ++j) a(i, j) = gaussian(seed, 1, static_cast<std::uint64_t>(i * n + j));
  return a;
}

matrix_d uniform_system(Eigen::Index m, Eigen::Index n, std::uint64_t seed) {
  matrix_d a(m, n);
  for (Eigen::Index i = 0; i < m; ++i)
    for (Eigen::Index j = 0; j < n; ++j) a(i, j) = uniform01(seed, 1, static_cast<std::uint64_t>(i * n + j), 0);
  return a;
}

fit_vector gaussian_rhs(Eigen::Index m, std::uint64_t seed) {
  fit_vector b(m);
  for (Eigen::Index i = 0; i < m; ++i) b(i) = gaussian(seed, 2, static_cast<std::uint64_t>(i));
  return b;
}

// The NNLS optimum by exhaustion: the optimum's entries are positive on its support
// and it is the unconstrained least-squares solution there, so it is the best of the
// support-restricted least-squares solutions that are positive (solved here by
// Householder QR on A_S itself, not on normal equations).
struct brute_result {
  fit_vector x;
  double residual;
};

brute_result brute_force_nnls(const matrix_d& a, const fit_vector& b) {
  const Eigen::Index n = a.cols();
  brute_result best{fit_vector::Zero(n), b.norm()};
  for (unsigned mask = 1; mask < (1u << n); ++mask) {
    std::vector<Eigen::Index> idx;
    for (Eigen::Index j = 0; j < n; ++j)
      if (mask & (1u << j)) idx.push_back(j);
    matrix_d as(a.rows(), static_cast<Eigen::Index>(idx.size()));
    for (std::size_t c = 0; c < idx.size(); ++c) as.col(static_cast<Eigen::Index>(c)) = a.col(idx[c]);
    const fit_vector z = Eigen::HouseholderQR<matrix_d>(as).solve(b);
    if ((z.array() <= 0.0).any()) continue;
    fit_vector x = fit_vector::Zero(n);
    for (std::size_t c = 0; c < idx.size(); ++c) x(idx[c]) = z(static_cast<Eigen::Index>(c));
    const double r = (a * x - b).norm();
    if (r < best.residual) best = {x, r};
  }
  return best;
}

}  // namespace

TEST_CASE("NNLS matches exhaustive search over supports on small problems") {
  int active_constraints = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const bool nonneg = seed % 2 == 0;  // mass-like (non-negative) and signed systems
    const matrix_d a = nonneg ? uniform_system(9, 6, seed) : gaussian_system(9, 6, seed);
    const fit_vector b = gaussian_rhs(9, seed).cwiseAbs() + (nonneg ? fit_vector::Zero(9) : gaussian_rhs(9, seed + 100));
    const nnls_result got = nnls(a, b);
    const brute_result want = brute_force_nnls(a, b);
    INFO("seed " << seed);
    CHECK(got.converged);
    CHECK((got.x.array() >= 0.0).all());
    CHECK(std::abs(got.residual_norm - want.residual) <= 1e-10 * (1.0 + want.residual));
    CHECK((got.x - want.x).norm() <= 1e-8 * (1.0 + want.x.norm()));
    if ((want.x.array() == 0.0).any()) ++active_constraints;
  }
  // The comparison exercised the constraint: many optima have zero entries.
  CHECK(active_constraints >= 10);
}

TEST_CASE("NNLS satisfies the KKT conditions on larger problems") {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    const matrix_d a = seed % 2 ? uniform_system(60, 24, seed) : gaussian_system(60, 24, seed);
    const fit_vector b = gaussian_rhs(60, seed);
    const nnls_result r = nnls(a, b);
    REQUIRE(r.converged);
    const fit_vector g = a.transpose() * (b - a * r.x);  // minus half the gradient
    const double tol = 1e-9 * a.norm() * b.norm();
    INFO("seed " << seed);
    for (Eigen::Index j = 0; j < a.cols(); ++j) {
      CHECK(r.x(j) >= 0.0);
      CHECK(g(j) <= tol);                          // no descent direction into x_j > 0
      if (r.x(j) > 0.0) CHECK(std::abs(g(j)) <= tol);  // stationary on the support
    }
  }
}

TEST_CASE("NNLS recovers a non-negative sparse solution of a consistent system") {
  const matrix_d a = uniform_system(50, 20, 9);
  fit_vector x = fit_vector::Zero(20);
  x(3) = 2.0, x(7) = 0.5, x(15) = 1.25;
  const nnls_result r = nnls(a, a * x);
  CHECK((r.x - x).norm() <= 1e-10);
  CHECK(r.residual_norm <= 1e-10);
}

TEST_CASE("NNLS from a warm start reaches the same optimum") {
  for (std::uint64_t seed = 1; seed <= 10; ++seed) {
    const matrix_d a = gaussian_system(16, 8, seed);
    const fit_vector b = gaussian_rhs(16, seed);
    const brute_result want = brute_force_nnls(a, b);
    // Starts: the optimum of the first 7 columns padded with 0 (what OMP passes), and
    // an arbitrary positive vector.
    const nnls_result part = nnls(a.leftCols(7), b);
    fit_vector s1_ = fit_vector::Zero(8);
    s1_.head(7) = part.x;
    const fit_vector s1 = s1_;
    const fit_vector s2 = fit_vector::Constant(8, 0.3);
    const matrix_d g = a.transpose() * a;
    const fit_vector atb = a.transpose() * b;
    for (const fit_vector* s : {&s1, &s2}) {
      const nnls_result r = nnls_normal(g, atb, 0, nnls_default_tolerance(a, b), s);
      INFO("seed " << seed);
      CHECK(r.converged);
      CHECK((r.x - want.x).norm() <= 1e-8 * (1.0 + want.x.norm()));
    }
  }
}

TEST_CASE("NNLS rejects mismatched systems") {
  CHECK_THROWS_AS(nnls(matrix_d::Zero(4, 3), fit_vector::Zero(5)), std::invalid_argument);
  CHECK_THROWS_AS(nnls(matrix_d::Zero(4, 0), fit_vector::Zero(4)), std::invalid_argument);
}

// ---- bounded least squares (bvls) ---------------------------------------------------
// Oracles independent of the solver: (1) exhaustion over every assignment of each
// variable to {lower, upper, free} (3^n), each free block solved by Gaussian elimination
// with partial pivoting on A_F^T A_F in long double, feasible candidates compared by
// their residual in long double; (2) the KKT conditions of the box-constrained problem,
// evaluated in long double: with w = A^T (b - A x), w_j = 0 where lower < x_j < upper,
// w_j <= 0 at the lower bound, w_j >= 0 at the upper bound.
namespace {

using ld = long double;

ld residual_ld(const matrix_d& a, const fit_vector& b, const std::vector<ld>& x) {
  ld s = 0;
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    ld r = static_cast<ld>(b(i));
    for (Eigen::Index j = 0; j < a.cols(); ++j) r -= static_cast<ld>(a(i, j)) * x[static_cast<std::size_t>(j)];
    s += r * r;
  }
  return std::sqrt(s);
}

// Solves M z = r (k x k, long double) by Gaussian elimination with partial pivoting;
// false when M is singular.
bool solve_ld(std::vector<std::vector<ld>> m, std::vector<ld> r, std::vector<ld>& z) {
  const std::size_t k = r.size();
  for (std::size_t c = 0; c < k; ++c) {
    std::size_t p = c;
    for (std::size_t i = c + 1; i < k; ++i)
      if (std::fabs(m[i][c]) > std::fabs(m[p][c])) p = i;
    if (m[p][c] == 0) return false;
    std::swap(m[p], m[c]);
    std::swap(r[p], r[c]);
    for (std::size_t i = c + 1; i < k; ++i) {
      const ld f = m[i][c] / m[c][c];
      for (std::size_t j = c; j < k; ++j) m[i][j] -= f * m[c][j];
      r[i] -= f * r[c];
    }
  }
  z.assign(k, 0);
  for (std::size_t c = k; c-- > 0;) {
    ld s = r[c];
    for (std::size_t j = c + 1; j < k; ++j) s -= m[c][j] * z[j];
    z[c] = s / m[c][c];
  }
  return true;
}

struct brute_box {
  std::vector<ld> x;
  ld residual;
  int at_bounds;  // entries of the optimum at a bound
};

brute_box brute_force_bvls(const matrix_d& a, const fit_vector& b, double lo, double hi) {
  const auto n = static_cast<std::size_t>(a.cols());
  const auto m = static_cast<std::size_t>(a.rows());
  std::size_t total = 1;
  for (std::size_t j = 0; j < n; ++j) total *= 3;
  brute_box best{{}, std::numeric_limits<ld>::infinity(), 0};
  for (std::size_t code = 0; code < total; ++code) {
    std::vector<int> s(n);  // 0 lower, 1 upper, 2 free
    std::size_t c = code;
    for (std::size_t j = 0; j < n; ++j, c /= 3) s[j] = static_cast<int>(c % 3);
    std::vector<ld> x(n);
    std::vector<std::size_t> f;
    for (std::size_t j = 0; j < n; ++j) {
      if (s[j] == 2) f.push_back(j);
      x[j] = s[j] == 0 ? lo : hi;
    }
    if (!f.empty()) {
      // Normal equations of the free block with the bound columns moved right.
      std::vector<std::vector<ld>> g(f.size(), std::vector<ld>(f.size(), 0));
      std::vector<ld> r(f.size(), 0);
      for (std::size_t i = 0; i < m; ++i) {
        ld bi = static_cast<ld>(b(static_cast<Eigen::Index>(i)));
        for (std::size_t j = 0; j < n; ++j)
          if (s[j] != 2) bi -= static_cast<ld>(a(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(j))) * x[j];
        for (std::size_t p = 0; p < f.size(); ++p) {
          const ld ap = a(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(f[p]));
          r[p] += ap * bi;
          for (std::size_t q = 0; q < f.size(); ++q)
            g[p][q] += ap * static_cast<ld>(a(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(f[q])));
        }
      }
      std::vector<ld> z;
      if (!solve_ld(g, r, z)) continue;
      bool ok = true;
      for (std::size_t p = 0; p < f.size(); ++p) {
        if (!(z[p] > lo && z[p] < hi)) ok = false;
        x[f[p]] = z[p];
      }
      if (!ok) continue;
    }
    const ld res = residual_ld(a, b, x);
    if (res < best.residual) best = {x, res, static_cast<int>(n - f.size())};
  }
  return best;
}

// Worst KKT violation of x, relative to ||A||_F ||b||, in long double.
ld kkt_violation(const matrix_d& a, const fit_vector& b, const fit_vector& x, double lo, double hi) {
  ld worst = 0;
  std::vector<ld> r(static_cast<std::size_t>(a.rows()));
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    ld s = static_cast<ld>(b(i));
    for (Eigen::Index j = 0; j < a.cols(); ++j) s -= static_cast<ld>(a(i, j)) * static_cast<ld>(x(j));
    r[static_cast<std::size_t>(i)] = s;
  }
  for (Eigen::Index j = 0; j < a.cols(); ++j) {
    if (x(j) < lo || x(j) > hi) return std::numeric_limits<ld>::infinity();
    ld w = 0;
    for (Eigen::Index i = 0; i < a.rows(); ++i) w += static_cast<ld>(a(i, j)) * r[static_cast<std::size_t>(i)];
    const ld v = x(j) == lo ? std::max<ld>(w, 0) : x(j) == hi ? std::max<ld>(-w, 0) : std::fabs(w);
    worst = std::max(worst, v);
  }
  return worst / (static_cast<ld>(a.norm()) * static_cast<ld>(b.norm()));
}

}  // namespace

TEST_CASE("bvls matches exhaustive search over bound assignments (long double) on small problems") {
  int lower_active = 0, upper_active = 0;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    const bool mass_like = seed % 2 == 0;  // non-negative masses, as the weight fit sees
    const matrix_d a = mass_like ? uniform_system(10, 6, seed) : gaussian_system(10, 6, seed);
    const fit_vector b = mass_like ? fit_vector(gaussian_rhs(10, seed).cwiseAbs() * 3.0) : gaussian_rhs(10, seed + 7);
    const double lo = mass_like ? 0.05 : -0.4, hi = mass_like ? 1.5 : 0.3;
    const bvls_result got = bvls(a, b, lo, hi);
    const brute_box want = brute_force_bvls(a, b, lo, hi);
    INFO("seed " << seed);
    REQUIRE(got.converged);
    for (Eigen::Index j = 0; j < 6; ++j) {
      CHECK(std::fabs(static_cast<ld>(got.x(j)) - want.x[static_cast<std::size_t>(j)]) <= 1e-9L);
      lower_active += got.x(j) == lo;
      upper_active += got.x(j) == hi;
    }
    CHECK(std::fabs(static_cast<ld>(got.residual_norm) - want.residual) <= 1e-10L * (1 + want.residual));
    CHECK(got.at_lower + got.at_upper == want.at_bounds);
    CHECK(kkt_violation(a, b, got.x, lo, hi) <= 1e-12L);
  }
  // Both bounds were exercised, many times.
  CHECK(lower_active >= 20);
  CHECK(upper_active >= 20);
}

TEST_CASE("bvls satisfies the KKT conditions (long double) on larger problems, cold and warm") {
  for (std::uint64_t seed = 1; seed <= 6; ++seed) {
    const matrix_d a = seed % 2 ? uniform_system(80, 30, seed) : gaussian_system(80, 30, seed);
    const fit_vector b = seed % 2 ? fit_vector(gaussian_rhs(80, seed).cwiseAbs() * 4.0) : gaussian_rhs(80, seed);
    const double lo = seed % 2 ? 0.0498 : -0.2, hi = seed % 2 ? 1.0 : 0.25;
    const bvls_result cold = bvls(a, b, lo, hi);
    const fit_vector start = fit_vector::Constant(30, 0.5 * (lo + hi));
    const bvls_result warm = bvls_normal(a.transpose() * a, a.transpose() * b, lo, hi, 0, nnls_default_tolerance(a, b),
                                         &start);
    INFO("seed " << seed);
    REQUIRE(cold.converged);
    REQUIRE(warm.converged);
    CHECK(kkt_violation(a, b, cold.x, lo, hi) <= 1e-11L);
    CHECK(kkt_violation(a, b, warm.x, lo, hi) <= 1e-11L);
    CHECK((cold.x - warm.x).norm() <= 1e-8 * (1.0 + cold.x.norm()));
    CHECK(cold.at_lower + cold.at_upper > 0);
  }
}

TEST_CASE("bvls with a bound that never binds is least squares") {
  const matrix_d a = gaussian_system(40, 8, 3);
  const fit_vector x0 = fit_vector::LinSpaced(8, 0.2, 0.9);
  const bvls_result r = bvls(a, a * x0, 0.1, 1.0);
  CHECK((r.x - x0).norm() <= 1e-10);
  CHECK(r.at_lower == 0);
  CHECK(r.at_upper == 0);
}

TEST_CASE("bvls rejects bad input, naming the problem") {
  using Catch::Matchers::Contains;
  CHECK_THROWS_WITH(bvls(matrix_d::Zero(4, 3), fit_vector::Zero(5), 0.0, 1.0), Contains("4 rows but 5"));
  CHECK_THROWS_WITH(bvls(matrix_d::Zero(4, 0), fit_vector::Zero(4), 0.0, 1.0), Contains("no columns"));
  CHECK_THROWS_WITH(bvls(matrix_d::Identity(3, 3), fit_vector::Ones(3), 1.0, 1.0), Contains("not above the lower"));
  CHECK_THROWS_WITH(bvls(matrix_d::Identity(3, 3), fit_vector::Ones(3), 1.0, std::nan("")),
                    Contains("not above the lower"));
  CHECK_THROWS_WITH(bvls(matrix_d::Identity(3, 3), fit_vector::Ones(3), -std::numeric_limits<double>::infinity(), 1.0),
                    Contains("lower bound is not finite"));
  const fit_vector bad_start = fit_vector::Zero(2);
  CHECK_THROWS_WITH(bvls_normal(matrix_d::Identity(3, 3), fit_vector::Ones(3), 0.0, 1.0, 0, 0.0, &bad_start),
                    Contains("warm start"));
  CHECK_THROWS_AS(bvls_normal(matrix_d::Identity(3, 2), fit_vector::Ones(3), 0.0, 1.0, 0, 0.0), std::invalid_argument);
}
