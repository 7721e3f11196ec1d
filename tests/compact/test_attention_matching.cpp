// Attention Matching: exactness at ratio 1, least-squares optimality under nested
// query and key sets, OMP recovery of planted selections, the value-fit fallback,
// and the comparison with eviction baselines on structured synthetic heads.
#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include <Eigen/Dense>
#include <catch2/catch.hpp>

#include <kvq/compact/attention_matching.hpp>
#include <kvq/compact/eviction.hpp>

#include "data.hpp"

using namespace kvq::compact;
using kvq::matrix_d;
using kvq::matrix_f;
using kvq_test_compact::gaussian_matrix;
using kvq_test_compact::uniform01;

namespace {

// A head with structure: background keys N(0, I); kHeavy tokens with key alpha u_h
// (u_h random unit directions); each query is N(0, I) plus gamma u_h for one h, so
// it puts a large share of its attention on one heavy token and the rest on the
// diffuse background (about 40% / 60% for alpha = 9, gamma = 4, d = 32).
constexpr int kHeavy = 8;

struct head {
  matrix_f k, v, q, held_out;
  std::vector<token_index> heavy;
};

head structured_head(Eigen::Index n, Eigen::Index d, Eigen::Index m, std::uint64_t seed, double alpha = 9.0,
                     double gamma = 4.0) {
  head h;
  h.k = gaussian_matrix(n, d, seed, 1);
  h.v = gaussian_matrix(n, d, seed, 2);
  matrix_f u = gaussian_matrix(kHeavy, d, seed, 3);
  for (int j = 0; j < kHeavy; ++j) {
    u.row(j) /= u.row(j).norm();
    const token_index t = (j * 61 + 13) % n;
    h.heavy.push_back(t);
    h.k.row(t) = (alpha * u.row(j).cast<double>()).cast<float>();
  }
  std::sort(h.heavy.begin(), h.heavy.end());
  auto make_queries = [&](Eigen::Index rows, std::uint64_t stream) {
    matrix_f q = gaussian_matrix(rows, d, seed, stream);
    for (Eigen::Index i = 0; i < rows; ++i) {
      const auto j = static_cast<Eigen::Index>(uniform01(seed, stream + 100, static_cast<std::uint64_t>(i), 0) * kHeavy);
      q.row(i) += (gamma * u.row(j).cast<double>()).cast<float>();
    }
    return q;
  };
  h.q = make_queries(m, 4);
  h.held_out = make_queries(64, 5);
  return h;
}

double relative_output_error(const matrix_f& q, const compaction_result& r, const matrix_d& original) {
  return (compacted_attention(q, r) - original).norm() / original.norm();
}

std::vector<token_index> all_tokens(Eigen::Index n) {
  std::vector<token_index> t(static_cast<std::size_t>(n));
  for (Eigen::Index i = 0; i < n; ++i) t[static_cast<std::size_t>(i)] = i;
  return t;
}

}  // namespace

TEST_CASE("Attention Matching at ratio 1 reproduces the original attention to rounding") {
  // (n = 128: the NNLS at ratio 1 moves all n columns into the passive set one by one.)
  const head h = structured_head(128, 32, 192, 2);
  const compaction_result r = attention_matching(h.k, h.v, h.q, budget_from_ratio(128, 1.0));
  REQUIRE(r.kept == all_tokens(128));
  const fit_diagnostics& dg = r.diagnostics;
  CHECK(dg.value_fallbacks == 0);
  CHECK(dg.clamped_weights == 0);
  CHECK(dg.value_rank == 128);
  // Keeping every token, w = 1 (beta = 0) solves the mass fit exactly; NNLS in double
  // finds it up to the conditioning of the 192 x 128 mass matrix.
  CHECK(dg.mass_residual <= 1e-10);
  double max_beta = 0.0;
  for (float b : r.beta) max_beta = std::max(max_beta, static_cast<double>(std::abs(b)));
  CHECK(max_beta <= 1e-7);
  CHECK(r.keys == h.k);
  // V solves the value fit exactly when X is the original softmax; the fitted biases
  // perturb X by a relative <= 2 max|beta| (~1e-8), which moves the least-squares
  // solution off V by the same order times the system's conditioning: the stored float
  // values are V up to float rounding of that (measured: one ulp on a few entries).
  const double vmax = static_cast<double>(h.v.cwiseAbs().maxCoeff());
  const double value_shift = static_cast<double>((r.values - h.v).cwiseAbs().maxCoeff());
  CHECK(value_shift <= 1e-8 * vmax);
  // The output error is then bounded: |beta_j| <= b scales every softmax weight by a
  // factor within exp(+-2b), moving an output by at most expm1(2b) max|v|; the value
  // shift moves it by at most value_shift; double rounding of the two evaluations adds
  // about n * eps * max|v|.
  const double bound = (std::expm1(2.0 * max_beta) + 128.0 * 2.3e-16) * vmax + value_shift;
  for (const matrix_f* q : {&h.q, &h.held_out}) {
    const matrix_d diff = compacted_attention(*q, r) - reference_attention(*q, h.k, h.v);
    CHECK(diff.cwiseAbs().maxCoeff() <= bound);
  }
}

TEST_CASE("more reference queries never make the fit worse on the enlarged set") {
  // Nested query sets Q1 (first 96) within Q2 (all 192), a fixed kept set: each fit is
  // the least-squares optimum over its own queries, so the Q2 fit is at least as good
  // on Q2 as the Q1 fit is on Q2 (mass: NNLS; values: plain least squares, same X).
  const head h = structured_head(256, 32, 192, 3);
  const std::vector<token_index> kept = attention_matching(h.k, h.v, h.q, 25).kept;
  const matrix_f q1 = h.q.topRows(96);
  const attention_targets t1 = make_targets(h.k, h.v, q1), t2 = make_targets(h.k, h.v, h.q);
  const attention_matching_options opt;
  const mass_fit m1 = fit_mass(gather_columns(t1.mass, kept), t1.total, opt);
  const mass_fit m2 = fit_mass(gather_columns(t2.mass, kept), t2.total, opt);
  const matrix_d a2 = gather_columns(t2.mass, kept);
  const double r1_on_q2 = (a2 * m1.weight - t2.total).norm(), r2_on_q2 = (a2 * m2.weight - t2.total).norm();
  CHECK(r2_on_q2 <= r1_on_q2 * (1.0 + 1e-12));
  CHECK(r2_on_q2 < r1_on_q2);  // and here strictly: the sets differ in earnest

  const matrix_f ck = gather_rows(h.k, kept), cv = gather_rows(h.v, kept);
  const matrix_d x2 = softmax_weights(attention_scores(h.q, ck, m2.beta));
  const matrix_d x1 = x2.topRows(96);
  const value_fit v1 = fit_values(x1, t1.output, cv, 0.0), v2 = fit_values(x2, t2.output, cv, 0.0);
  REQUIRE_FALSE(v1.fallback);
  REQUIRE_FALSE(v2.fallback);
  const double e1 = (weighted_values(x2, v1.values) - t2.output).norm();
  const double e2 = (weighted_values(x2, v2.values) - t2.output).norm();
  // Stored values are float: allow the float rounding of the fitted values.
  CHECK(e2 <= e1 * (1.0 + 1e-6));

  // Nested key sets: more kept keys never increase the mass residual (NNLS optimum
  // over a larger cone).
  double previous = std::numeric_limits<double>::infinity();
  for (Eigen::Index b : {5, 10, 25, 50, 100}) {
    const std::vector<token_index> prefix = top_k_tokens(std::vector<double>(256, 0.0), b, 0);  // tokens 0..b-1
    const mass_fit f = fit_mass(gather_columns(t2.mass, prefix), t2.total, opt);
    CHECK(f.relative_residual <= previous * (1.0 + 1e-12));
    previous = f.relative_residual;
  }
}

TEST_CASE("OMP recovers a planted sparse selection") {
  // Sparse non-negative columns, target b = A_S c with c > 0. Tropp's exact-recovery
  // condition max_{j not in S} ||A_S^+ a_j||_1 < 1 (IEEE Trans. IT 50(10), 2004)
  // guarantees recovery for classical OMP; this variant (signed correlation, NNLS
  // refit) is checked to recover S whenever it holds, and on most seeds overall.
  const std::vector<token_index> planted{3, 11, 22, 35};
  const double c[4] = {1.5, 0.7, 2.0, 1.1};
  int recovered = 0, erc_holds = 0;
  for (std::uint64_t seed = 1; seed <= 20; ++seed) {
    const Eigen::Index m = 64, n = 40;
    matrix_d a(m, n);
    for (Eigen::Index i = 0; i < m; ++i)
      for (Eigen::Index j = 0; j < n; ++j) {
        const auto idx = static_cast<std::uint64_t>(i * n + j);
        a(i, j) = uniform01(seed, 1, idx, 0) < 0.25 ? uniform01(seed, 1, idx, 1) : 0.0;
      }
    fit_vector b = fit_vector::Zero(m);
    matrix_d as(m, 4);
    for (int k = 0; k < 4; ++k) {
      b += c[k] * a.col(planted[static_cast<std::size_t>(k)]);
      as.col(k) = a.col(planted[static_cast<std::size_t>(k)]);
    }
    const Eigen::CompleteOrthogonalDecomposition<matrix_d> pinv(as);
    double erc = 0.0;
    for (Eigen::Index j = 0; j < n; ++j)
      if (std::find(planted.begin(), planted.end(), j) == planted.end())
        erc = std::max(erc, fit_vector(pinv.solve(fit_vector(a.col(j)))).lpNorm<1>());
    std::vector<token_index> sel = select_orthogonal_matching_pursuit(a, b, 4);
    std::sort(sel.begin(), sel.end());
    INFO("seed " << seed << " ERC " << erc);
    if (erc < 1.0) {
      ++erc_holds;
      CHECK(sel == planted);
    }
    if (sel == planted) {
      ++recovered;
      const nnls_result w = nnls(gather_columns(a, sel), b);
      for (int k = 0; k < 4; ++k) CHECK(std::abs(w.x(k) - c[k]) <= 1e-9);
    }
  }
  CHECK(erc_holds >= 4);
  CHECK(recovered >= 18);
}

TEST_CASE("both key selections find the heavy tokens of a structured head") {
  const head h = structured_head(256, 32, 128, 4);
  CHECK(attention_matching(h.k, h.v, h.q, kHeavy).kept == h.heavy);
  attention_matching_options omp;
  omp.selection = key_selection::orthogonal_matching_pursuit;
  CHECK(attention_matching(h.k, h.v, h.q, kHeavy, omp).kept == h.heavy);
}

TEST_CASE("Attention Matching at 10x beats eviction on held-out queries") {
  for (std::uint64_t seed : {1u, 5u}) {
    const head h = structured_head(256, 32, 128, seed);
    const Eigen::Index budget = budget_from_ratio(256, 10.0);
    const matrix_d original = reference_attention(h.held_out, h.k, h.v);
    attention_matching_options omp;
    omp.selection = key_selection::orthogonal_matching_pursuit;
    snapkv_options snap;
    snap.observation_window = 32;
    const double am = relative_output_error(h.held_out, attention_matching(h.k, h.v, h.q, budget), original);
    const double am_omp = relative_output_error(h.held_out, attention_matching(h.k, h.v, h.q, budget, omp), original);
    double best_eviction = std::numeric_limits<double>::infinity();
    for (const compaction_result& e :
         {streaming_llm(h.k, h.v, budget), h2o(h.k, h.v, h.q, budget), h2o(h.k, h.v, h.q, budget, budget / 2),
          snapkv(h.k, h.v, h.q, budget, snap), random_subset(h.k, h.v, budget, seed)})
      best_eviction = std::min(best_eviction, relative_output_error(h.held_out, e, original));
    INFO("seed " << seed << ": AM " << am << ", AM-OMP " << am_omp << ", best eviction " << best_eviction);
    CHECK(am < 0.5 * best_eviction);
    CHECK(am_omp < 0.5 * best_eviction);
  }
}

TEST_CASE("a singular value fit falls back to the original values and is counted") {
  // Two kept tokens with identical keys give identical columns of X: without ridge the
  // value system is rank-deficient.
  matrix_f k = gaussian_matrix(64, 16, 7, 1), v = gaussian_matrix(64, 16, 7, 2);
  k.row(9) = k.row(4);
  const matrix_f q = gaussian_matrix(32, 16, 7, 3);
  attention_matching_options plain;
  plain.value_ridge = 0.0;
  const compaction_result r = fit_compacted_cache(k, v, q, {1, 4, 9, 20}, plain);
  CHECK(r.diagnostics.value_fallbacks == 1);
  CHECK(r.diagnostics.value_rank == 3);
  CHECK(r.values == gather_rows(v, {1, 4, 9, 20}));
  // With the default ridge the same fit is regular.
  const compaction_result ridged = fit_compacted_cache(k, v, q, {1, 4, 9, 20});
  CHECK(ridged.diagnostics.value_fallbacks == 0);
  CHECK(ridged.diagnostics.value_rank == 4);
}

TEST_CASE("Attention Matching rejects bad input, naming the problem") {
  const matrix_f k = gaussian_matrix(64, 16, 8, 1), v = gaussian_matrix(64, 16, 8, 2);
  const matrix_f q = gaussian_matrix(32, 16, 8, 3);
  CHECK_THROWS_WITH(attention_matching(k, v, q, 0), Catch::Contains("budget"));
  CHECK_THROWS_WITH(attention_matching(k, v, q, 65), Catch::Contains("budget"));
  CHECK_THROWS_WITH(attention_matching(k, v, q, 33), Catch::Contains("reference queries"));
  CHECK_THROWS_WITH(attention_matching(k, v, matrix_f(32, 8), 4), Catch::Contains("head_dim"));
  CHECK_THROWS_WITH(attention_matching(k, matrix_f(60, 16), q, 4), Catch::Contains("tokens"));
  CHECK_THROWS_WITH(fit_compacted_cache(k, v, q, {3, 3}), Catch::Contains("ascending"));
  CHECK_THROWS_WITH(fit_compacted_cache(k, v, q, {3, 64}), Catch::Contains("range"));
  attention_matching_options bad;
  bad.value_ridge = -1.0;
  CHECK_THROWS_WITH(attention_matching(k, v, q, 4, bad), Catch::Contains("ridge"));
  bad = {};
  bad.weight_floor = 0.0;
  CHECK_THROWS_WITH(attention_matching(k, v, q, 4, bad), Catch::Contains("floor"));
  matrix_f knan = k;
  knan(5, 3) = std::numeric_limits<float>::quiet_NaN();
  CHECK_THROWS_WITH(attention_matching(knan, v, q, 4), Catch::Contains("non-finite"));
  matrix_f qinf = q;
  qinf(0, 0) = std::numeric_limits<float>::infinity();
  CHECK_THROWS_WITH(attention_matching(k, v, qinf, 4), Catch::Contains("non-finite"));
  CHECK_THROWS_WITH(select_orthogonal_matching_pursuit(matrix_d::Ones(8, 6), fit_vector::Ones(8), 7),
                    Catch::Contains("budget"));
  CHECK_THROWS_WITH(select_orthogonal_matching_pursuit(matrix_d::Ones(8, 6), fit_vector::Ones(7), 2),
                    Catch::Contains("totals"));
}

// ---- the weight fit: bounded (default, the reference code's bounds) and exact ---------

TEST_CASE("the default weight bounds are the reference code's e^-3, e^3, 1e-12, e^7 and beta < -7") {
  // Independent values: e^-3, e^3 and e^7 to 17 significant digits.
  attention_matching_options rms;
  const weight_bounds br = resolve_weight_bounds(rms);
  CHECK(std::fabs(br.lower - 0.049787068367863943) <= 1e-17);
  CHECK(std::fabs(br.upper - 20.085536923187668) <= 4e-15);
  CHECK(br.drop_beta_below == -std::numeric_limits<double>::infinity());
  attention_matching_options omp;
  omp.selection = key_selection::orthogonal_matching_pursuit;
  const weight_bounds bo = resolve_weight_bounds(omp);
  CHECK(bo.lower == 1e-12);
  CHECK(std::fabs(bo.upper - 1096.6331584284585) <= 3e-13);
  CHECK(bo.drop_beta_below == -7.0);
  omp.weight_upper = 50.0;
  CHECK(resolve_weight_bounds(omp).upper == 50.0);
}

TEST_CASE("a nearly square exact fit wastes keys at the floor; the bounded fit keeps them in the box") {
  // 40 kept keys on 48 reference queries: the regime the default grid used to be in.
  const head h = structured_head(400, 32, 48, 11);
  const attention_targets tg = make_targets(h.k, h.v, h.q);
  const std::vector<token_index> kept = select_highest_rms_attention(tg.weights, 40);
  const matrix_d a = gather_columns(tg.mass, kept);
  attention_matching_options exact;
  exact.fit = weight_fit::exact;
  const mass_fit fe = fit_mass(a, tg.total, exact);
  int at_floor = 0;
  for (Eigen::Index j = 0; j < fe.weight.size(); ++j) at_floor += fe.weight(j) == exact.weight_floor;
  CHECK(fe.clamped == at_floor);
  CHECK(at_floor >= 5);  // the unbounded optimum zeroes keys

  const attention_matching_options bounded;
  const weight_bounds b = resolve_weight_bounds(bounded);
  const mass_fit fb = fit_mass(a, tg.total, bounded);
  int at_bound = 0;
  for (Eigen::Index j = 0; j < fb.weight.size(); ++j) {
    CHECK(fb.weight(j) >= b.lower);
    CHECK(fb.weight(j) <= b.upper);
    at_bound += fb.weight(j) == b.lower || fb.weight(j) == b.upper;
    // beta is float(log w): within float rounding of log(w) (std::log as the oracle).
    CHECK(std::fabs(static_cast<double>(fb.beta[static_cast<std::size_t>(j)]) - std::log(fb.weight(j))) <=
          1e-6 * (1.0 + std::fabs(std::log(fb.weight(j)))));
  }
  CHECK(fb.clamped == at_bound);
  // KKT of the box problem in long double: w_j = 0 inside, <= 0 at lower, >= 0 at upper.
  std::vector<long double> r(static_cast<std::size_t>(a.rows()));
  for (Eigen::Index i = 0; i < a.rows(); ++i) {
    long double s = tg.total(i);
    for (Eigen::Index j = 0; j < a.cols(); ++j) s -= static_cast<long double>(a(i, j)) * fb.weight(j);
    r[static_cast<std::size_t>(i)] = s;
  }
  const long double tol = 1e-10L * static_cast<long double>(a.norm() * tg.total.norm());
  for (Eigen::Index j = 0; j < a.cols(); ++j) {
    long double w = 0;
    for (Eigen::Index i = 0; i < a.rows(); ++i) w += static_cast<long double>(a(i, j)) * r[static_cast<std::size_t>(i)];
    if (fb.weight(j) == b.lower)
      CHECK(w <= tol);
    else if (fb.weight(j) == b.upper)
      CHECK(w >= -tol);
    else
      CHECK(std::fabs(w) <= tol);
  }
  // The exact fit's residual is the lower one (a larger feasible set).
  CHECK(fe.relative_residual <= fb.relative_residual + 1e-12);
}

TEST_CASE("bounded OMP drops keys whose beta falls below -7 and refills the budget") {
  // b is an exact positive combination of 4 columns; 2 more columns are small noise. With
  // a budget of 5, the 5th pick can only get w at the 1e-12 floor (beta ~ -27.6 < -7): the
  // bounded variant drops it, excludes it, refills with the last column, drops that too,
  // and returns the 4 planted columns; the exact variant keeps 5.
  const Eigen::Index m = 24, n = 6;
  matrix_d a(m, n);
  for (Eigen::Index i = 0; i < m; ++i)
    for (Eigen::Index j = 0; j < n; ++j)
      a(i, j) = uniform01(17, 1, static_cast<std::uint64_t>(i * n + j), 0) * (j >= 4 ? 0.01 : 1.0);
  const double c[4] = {1.5, 0.7, 2.0, 1.1};
  fit_vector b = fit_vector::Zero(m);
  for (int k = 0; k < 4; ++k) b += c[k] * a.col(k);
  attention_matching_options opt;
  opt.selection = key_selection::orthogonal_matching_pursuit;
  std::vector<token_index> sel = select_orthogonal_matching_pursuit(a, b, 5, opt);
  std::sort(sel.begin(), sel.end());
  CHECK(sel == std::vector<token_index>{0, 1, 2, 3});
  opt.fit = weight_fit::exact;
  CHECK(select_orthogonal_matching_pursuit(a, b, 5, opt).size() == 5);
  // No drop rounds: the budget is filled.
  opt.fit = weight_fit::bounded;
  opt.drop_rounds = 0;
  CHECK(select_orthogonal_matching_pursuit(a, b, 5, opt).size() == 5);
}

TEST_CASE("the exact weight fit remains available and matches Lawson-Hanson NNLS") {
  const head h = structured_head(256, 32, 128, 6);
  attention_matching_options exact;
  exact.fit = weight_fit::exact;
  const compaction_result r = attention_matching(h.k, h.v, h.q, 25, exact);
  const attention_targets tg = make_targets(h.k, h.v, h.q);
  const nnls_result want = nnls(gather_columns(tg.mass, r.kept), tg.total);
  for (std::size_t j = 0; j < r.kept.size(); ++j) {
    const double w = std::max(want.x(static_cast<Eigen::Index>(j)), exact.weight_floor);
    CHECK(r.beta[j] == static_cast<float>(kvq::math::log(w)));
  }
}

TEST_CASE("bad weight bounds are rejected, naming the problem") {
  const matrix_f k = gaussian_matrix(64, 16, 8, 1), v = gaussian_matrix(64, 16, 8, 2);
  const matrix_f q = gaussian_matrix(32, 16, 8, 3);
  attention_matching_options bad;
  bad.weight_lower = 0.0;
  CHECK_THROWS_WITH(attention_matching(k, v, q, 4, bad), Catch::Contains("lower bound"));
  bad = {};
  bad.weight_lower = 2.0;
  bad.weight_upper = 1.0;
  CHECK_THROWS_WITH(attention_matching(k, v, q, 4, bad), Catch::Contains("upper bound"));
  bad = {};
  bad.drop_rounds = -1;
  CHECK_THROWS_WITH(attention_matching(k, v, q, 4, bad), Catch::Contains("drop rounds"));
  bad = {};
  bad.drop_beta_below = std::numeric_limits<double>::infinity();
  CHECK_THROWS_WITH(attention_matching(k, v, q, 4, bad), Catch::Contains("drop"));
  // The exact fit ignores the bounds.
  bad = {};
  bad.fit = weight_fit::exact;
  bad.weight_lower = 0.0;
  CHECK_NOTHROW(attention_matching(k, v, q, 4, bad));
}
