// kvq/compact/dense_solve.hpp against an independent oracle: the same systems solved by
// Gaussian elimination with partial pivoting in 50-digit arithmetic
// (boost::multiprecision::cpp_bin_float_50), least squares through the normal equations
// (harmless at 50 digits). The fixed-order solvers must agree to about the accuracy a
// backward-stable double solve has on these well-conditioned problems.
#include <catch2/catch.hpp>

#include <kvq/compact/dense_solve.hpp>

#include <boost/multiprecision/cpp_bin_float.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

namespace {

using mp = boost::multiprecision::cpp_bin_float_50;
using kvq::matrix_d;
using kvq::compact::fit_vector;

matrix_d random_matrix(std::mt19937_64& rng, Eigen::Index r, Eigen::Index c) {
  std::normal_distribution<double> nd(0.0, 1.0);
  matrix_d m(r, c);
  for (Eigen::Index i = 0; i < r; ++i)
    for (Eigen::Index j = 0; j < c; ++j) m(i, j) = nd(rng);
  return m;
}

// Solves the square system s x = rhs (n x n, n x p) in 50 digits; s must be nonsingular.
std::vector<std::vector<mp>> mp_solve(std::vector<std::vector<mp>> s, std::vector<std::vector<mp>> rhs) {
  const std::size_t n = s.size(), p = rhs.empty() ? 0 : rhs[0].size();
  for (std::size_t k = 0; k < n; ++k) {
    std::size_t piv = k;
    for (std::size_t i = k + 1; i < n; ++i)
      if (abs(s[i][k]) > abs(s[piv][k])) piv = i;
    std::swap(s[k], s[piv]);
    std::swap(rhs[k], rhs[piv]);
    for (std::size_t i = k + 1; i < n; ++i) {
      const mp f = s[i][k] / s[k][k];
      for (std::size_t j = k; j < n; ++j) s[i][j] -= f * s[k][j];
      for (std::size_t j = 0; j < p; ++j) rhs[i][j] -= f * rhs[k][j];
    }
  }
  std::vector<std::vector<mp>> x(n, std::vector<mp>(p));
  for (std::size_t c = 0; c < p; ++c)
    for (std::size_t ii = n; ii-- > 0;) {
      mp v = rhs[ii][c];
      for (std::size_t j = ii + 1; j < n; ++j) v -= s[ii][j] * x[j][c];
      x[ii][c] = v / s[ii][ii];
    }
  return x;
}

// The least-squares solution of A X = B (A full column rank) in 50 digits: A^T A X = A^T B.
std::vector<std::vector<mp>> mp_least_squares(const matrix_d& a, const matrix_d& b) {
  const Eigen::Index m = a.rows(), n = a.cols(), p = b.cols();
  std::vector<std::vector<mp>> g(n, std::vector<mp>(n)), r(n, std::vector<mp>(p));
  for (Eigen::Index i = 0; i < n; ++i) {
    for (Eigen::Index j = 0; j < n; ++j)
      for (Eigen::Index k = 0; k < m; ++k) g[i][j] += mp(a(k, i)) * mp(a(k, j));
    for (Eigen::Index j = 0; j < p; ++j)
      for (Eigen::Index k = 0; k < m; ++k) r[i][j] += mp(a(k, i)) * mp(b(k, j));
  }
  return mp_solve(g, r);
}

double max_rel_error(const matrix_d& x, const std::vector<std::vector<mp>>& want) {
  double scale = 0.0, err = 0.0;
  for (Eigen::Index i = 0; i < x.rows(); ++i)
    for (Eigen::Index j = 0; j < x.cols(); ++j) {
      const mp w = want[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)];
      scale = std::max(scale, static_cast<double>(abs(w)));
      err = std::max(err, static_cast<double>(abs(mp(x(i, j)) - w)));
    }
  return err / scale;
}

}  // namespace

TEST_CASE("solve_spd_ldlt solves SPD systems as 50-digit elimination does", "[compact][dense_solve]") {
  std::mt19937_64 rng(11);
  for (const Eigen::Index k : {1, 2, 5, 12, 40}) {
    INFO("k " << k);
    const matrix_d a = random_matrix(rng, k + 3, k);
    matrix_d g = a.transpose() * a;  // input only; the solve under test is fixed-order
    for (Eigen::Index i = 0; i < k; ++i) g(i, i) += 0.5;
    const matrix_d rhs_m = random_matrix(rng, k, 1);
    fit_vector rhs(k);
    for (Eigen::Index i = 0; i < k; ++i) rhs(i) = rhs_m(i, 0);
    fit_vector x;
    REQUIRE(kvq::compact::solve_spd_ldlt(g, rhs, x));
    std::vector<std::vector<mp>> gm(static_cast<std::size_t>(k), std::vector<mp>(static_cast<std::size_t>(k)));
    std::vector<std::vector<mp>> rm(static_cast<std::size_t>(k), std::vector<mp>(1));
    for (Eigen::Index i = 0; i < k; ++i) {
      rm[static_cast<std::size_t>(i)][0] = rhs(i);
      for (Eigen::Index j = 0; j < k; ++j) gm[static_cast<std::size_t>(i)][static_cast<std::size_t>(j)] = g(i, j);
    }
    matrix_d xm(k, 1);
    for (Eigen::Index i = 0; i < k; ++i) xm(i, 0) = x(i);
    CHECK(max_rel_error(xm, mp_solve(gm, rm)) < 1e-11);
  }
}

TEST_CASE("solve_spd_ldlt refuses what is not positive definite", "[compact][dense_solve]") {
  fit_vector x, rhs(2);
  rhs << 1.0, 1.0;
  matrix_d indefinite(2, 2);
  indefinite << 1.0, 2.0, 2.0, 1.0;  // d_1 = 1 - 4 = -3
  CHECK_FALSE(kvq::compact::solve_spd_ldlt(indefinite, rhs, x));
  CHECK_FALSE(kvq::compact::solve_spd_ldlt(matrix_d::Zero(2, 2), rhs, x));
  matrix_d with_nan = matrix_d::Identity(2, 2);
  with_nan(1, 1) = std::numeric_limits<double>::quiet_NaN();
  CHECK_FALSE(kvq::compact::solve_spd_ldlt(with_nan, rhs, x));
  CHECK_THROWS_AS(kvq::compact::solve_spd_ldlt(matrix_d::Zero(2, 3), rhs, x), std::invalid_argument);
  CHECK_THROWS_WITH(kvq::compact::solve_spd_ldlt(matrix_d::Identity(3, 3), rhs, x), Catch::Contains("rhs length"));
}

TEST_CASE("solve_least_squares_qr: full column rank, as the 50-digit normal equations", "[compact][dense_solve]") {
  std::mt19937_64 rng(7);
  for (const auto& shape : std::vector<std::pair<Eigen::Index, Eigen::Index>>{{1, 1}, {6, 6}, {30, 8}, {200, 41}}) {
    INFO("m " << shape.first << " n " << shape.second);
    const matrix_d a = random_matrix(rng, shape.first, shape.second);
    const matrix_d b = random_matrix(rng, shape.first, 3);
    const kvq::compact::qr_solution s = kvq::compact::solve_least_squares_qr(a, b);
    CHECK(s.rank == shape.second);
    CHECK(max_rel_error(s.x, mp_least_squares(a, b)) < 1e-10);
  }
}

TEST_CASE("solve_least_squares_qr: a dependent column gets 0 and the residual stays minimal", "[compact][dense_solve]") {
  std::mt19937_64 rng(3);
  matrix_d a = random_matrix(rng, 25, 5);
  a.col(3) = 2.0 * a.col(1);  // exact: a power-of-two multiple
  const matrix_d b = random_matrix(rng, 25, 2);
  const kvq::compact::qr_solution s = kvq::compact::solve_least_squares_qr(a, b);
  CHECK(s.rank == 4);
  // The oracle: the problem without column 3 (same column space) in 50 digits.
  matrix_d reduced(25, 4);
  reduced << a.col(0), a.col(1), a.col(2), a.col(4);
  const auto want = mp_least_squares(reduced, b);
  for (Eigen::Index c = 0; c < 2; ++c) {
    CHECK((s.x(1, c) == 0.0 || s.x(3, c) == 0.0));  // the basic solution drops one of the pair
    // Residuals of both solutions, in 50 digits.
    mp r_got = 0, r_want = 0;
    for (Eigen::Index i = 0; i < 25; ++i) {
      mp g = -mp(b(i, c)), w = -mp(b(i, c));
      for (Eigen::Index j = 0; j < 5; ++j) g += mp(a(i, j)) * mp(s.x(j, c));
      const Eigen::Index cols[4] = {0, 1, 2, 4};
      for (std::size_t j = 0; j < 4; ++j) w += mp(a(i, cols[j])) * want[j][static_cast<std::size_t>(c)];
      r_got += g * g;
      r_want += w * w;
    }
    CHECK(static_cast<double>(abs(sqrt(r_got) - sqrt(r_want)) / sqrt(r_want)) < 1e-12);
  }
}

TEST_CASE("solve_least_squares_qr: fewer rows than columns, zero matrix, bad shapes", "[compact][dense_solve]") {
  std::mt19937_64 rng(5);
  const matrix_d a = random_matrix(rng, 3, 6);
  const matrix_d b = random_matrix(rng, 3, 1);
  const kvq::compact::qr_solution s = kvq::compact::solve_least_squares_qr(a, b);
  CHECK(s.rank == 3);
  const matrix_d r = a * s.x - b;  // an exact fit exists: the residual is rounding only
  CHECK(kvq::compact::fixed_norm(r) < 1e-12);
  CHECK_THROWS_AS(kvq::compact::solve_least_squares_qr(matrix_d::Zero(4, 2), b), std::invalid_argument);
  const kvq::compact::qr_solution zero = kvq::compact::solve_least_squares_qr(matrix_d::Zero(3, 2), b);
  CHECK(zero.rank == 0);
  CHECK(zero.x.isZero(0.0));
}

TEST_CASE("fixed_norm and fixed_squared_norm against 50-digit sums", "[compact][dense_solve]") {
  std::mt19937_64 rng(9);
  const matrix_d a = random_matrix(rng, 17, 13);
  mp s = 0;
  for (Eigen::Index i = 0; i < a.rows(); ++i)
    for (Eigen::Index j = 0; j < a.cols(); ++j) s += mp(a(i, j)) * mp(a(i, j));
  CHECK(std::fabs(kvq::compact::fixed_squared_norm(a) - static_cast<double>(s)) <= 1e-14 * static_cast<double>(s));
  CHECK(std::fabs(kvq::compact::fixed_norm(a) - static_cast<double>(sqrt(s))) <= 1e-14 * static_cast<double>(sqrt(s)));
  CHECK(kvq::compact::fixed_norm(matrix_d::Zero(0, 0)) == 0.0);
}
