// Lawson-Hanson NNLS against an exhaustive search over supports (small problems) and
// the KKT conditions (larger ones).
#include <cmath>
#include <limits>
#include <stdexcept>

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
