/// \file
/// kvq/compact/attention_matching.hpp — KV compaction by Attention Matching (Zweiger,
/// Fu, Guo, Kim, "Fast KV Compaction via Attention Matching", arXiv 2602.16284, sec. 3).
///
/// For reference queries q_1..q_m with original scores s_it = q_i . k_t / sqrt(d), a
/// compacted cache (C_k, beta, C_v) of t keys should preserve, for every q_i,
///
///   the attention mass   sum_j exp(q_i . C_k[j] / sqrt(d) + beta_j) = sum_t exp(s_it)     (1)
///   the output           sum_j softmax_j(...) C_v[j]               = sum_t p_it v_t     (2)
///
/// so that the compacted block mixes with any other tokens exactly as the original
/// block would. The keys are a subset of the original keys; then (1) is linear in
/// w_j = exp(beta_j) >= 0 and (2) is linear in C_v:
///
///   beta:  min_{lo <= w <= hi} || A w - b ||_2,  A_ij = exp(s_i,kept_j - M_i),
///          b_i = sum_t exp(s_it - M_i),    M_i = max_t s_it         (bounded LS)
///   C_v:   min || X C_v - Y ||_F^2 + lambda || C_v - V_kept ||_F^2,
///          X_ij = softmax_j(s_i,kept + beta) with the stored float beta, Y = P V
///
/// (the shift M_i scales row i of (1) by exp(-M_i), which keeps the masses in [0, n]
/// without changing the problem's solution per query; it weights queries by their
/// normalised rather than absolute mass, as the reference code does).
///
/// Key selection (the paper's two variants):
///   * highest RMS attention: score_t = sqrt(mean_i p_it^2), the `budget` best tokens;
///   * orthogonal matching pursuit on (1): r = b; repeat budget times: pick the unselected
///     column j of the full mass matrix E_it = exp(s_it - M_i) maximising <E_j, r>
///     (ties: lowest j), refit w on the selected columns, r = b - E_S w; then (bounded
///     fit) drop keys with beta < -7 and refill, at most 3 rounds (reference code).
///
/// The weight fit (attention_matching_options::fit): bounded by default, w in the box of
/// the paper's reference code ([e^-3, e^3] for RMS keys, [1e-12, e^7] for OMP keys),
/// solved exactly by bvls (nnls.hpp); or exact Lawson-Hanson NNLS, w >= 0 unbounded. An
/// unbounded fit on few reference queries puts many keys at w = 0 (slots wasted) and
/// others at large w; the bounds keep every kept key in play.
///
/// Safeguards (documented in docs/compaction.md):
///   * bounded fit: weights at a bound are counted in diagnostics.clamped_weights;
///   * exact fit: a fitted weight at or below `weight_floor` (NNLS puts redundant keys at
///     exactly 0) is raised to it, beta = log(floor); counted in clamped_weights;
///   * the value fit carries a ridge toward the kept tokens' own values, lambda =
///     value_ridge * ||X||_F^2 / t (scale-free), solved as the augmented least-squares
///     system [X; sqrt(lambda) I] C = [Y; sqrt(lambda) V_kept] by column-pivoting QR
///     (no normal equations); if that system is rank-deficient (possible only with
///     value_ridge = 0) or the solution is not finite, the kept tokens' original values
///     are used and diagnostics.value_fallbacks = 1.
/// Every loop runs in a fixed order and nothing is threaded: the result is
/// deterministic.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <Eigen/Dense>

#include <kvq/compact/budget.hpp>
#include <kvq/compact/dense_solve.hpp>
#include <kvq/compact/nnls.hpp>
#include <kvq/compact/reference.hpp>
#include <kvq/compact/select.hpp>
#include <kvq/compact/types.hpp>
#include <kvq/core/math.hpp>

namespace kvq {
namespace compact {

/// Key selection of Attention Matching: highest RMS attention, or orthogonal matching
/// pursuit on the mass equation (1) (see the file description).
enum class key_selection { highest_rms_attention, orthogonal_matching_pursuit };

/// How the attention-mass weights w = exp(beta) are fitted.
enum class weight_fit {
  /// Bounded least squares (bvls): w in [lower, upper], the bounds of the reference
  /// implementation (see attention_matching_options). The default.
  bounded,
  /// Exact Lawson-Hanson NNLS (w >= 0, no upper bound), zeros raised to weight_floor.
  exact
};

/// Options of the Attention Matching compaction.
///
/// The bounded fit's default bounds are those of the paper's reference code
/// (github.com/adamzweiger/compaction, the AM-HighestAttnKeys and AM-OMP
/// configurations): highest-RMS-attention keys: w in [e^-3, e^3]; OMP keys: w in
/// [1e-12, e^7], and after the budget is filled, keys with beta < -7 are dropped,
/// excluded and the budget refilled by OMP (at most 3 rounds). The reference solves
/// least squares, clips into the box and takes 2 projected-gradient steps
/// (AM-HighestAttnKeys) or none (AM-OMP); kvq solves the box-constrained problem to
/// optimality (bvls), the point those steps move toward. NaN bounds mean these defaults.
struct attention_matching_options {
  /// How the kept keys are chosen.
  key_selection selection = key_selection::highest_rms_attention;
  /// How the weights are fitted (bounded by default).
  weight_fit fit = weight_fit::bounded;
  /// Bounded fit: lower bound of w (NaN: e^-3 for RMS keys, 1e-12 for OMP keys).
  double weight_lower = std::numeric_limits<double>::quiet_NaN();
  /// Bounded fit: upper bound of w (NaN: e^3 for RMS keys, e^7 for OMP keys).
  double weight_upper = std::numeric_limits<double>::quiet_NaN();
  /// Bounded fit with OMP keys: keys whose beta falls below this are dropped and the
  /// budget refilled (NaN: -7; -infinity: never drop).
  double drop_beta_below = std::numeric_limits<double>::quiet_NaN();
  /// Bounded fit with OMP keys: at most this many drop-and-refill rounds.
  int drop_rounds = 3;
  double weight_floor = 1e-12;  ///< exact fit: w = exp(beta) floor (beta >= log(floor) ~ -27.6)
  double value_ridge = 1e-8;    ///< relative ridge of the value fit (0: plain least squares)
  int nnls_max_iterations = 0;  ///< 0: Lawson-Hanson's 3 t (exact), bvls' 10 t (bounded)
};

/// The bounds of a bounded weight fit after defaults are resolved.
struct weight_bounds {
  double lower = 0.0;                                          ///< lower bound of w
  double upper = 0.0;                                          ///< upper bound of w
  double drop_beta_below = -std::numeric_limits<double>::infinity();  ///< OMP drop cutoff on beta
};

/// The bounds `opt` asks for, NaN entries replaced by the reference code's defaults for
/// opt.selection (see attention_matching_options).
/// \throws std::invalid_argument if the resolved lower bound is not > 0 and finite, the
///         upper bound is not above it, or the drop cutoff is NaN-free but +infinity.
inline weight_bounds resolve_weight_bounds(const attention_matching_options& opt) {
  const bool omp = opt.selection == key_selection::orthogonal_matching_pursuit;
  weight_bounds b;
  // e^-3, e^3, e^7 through kvq's exp: the same bits on every platform.
  b.lower = std::isnan(opt.weight_lower) ? (omp ? 1e-12 : kvq::math::exp(-3.0)) : opt.weight_lower;
  b.upper = std::isnan(opt.weight_upper) ? kvq::math::exp(omp ? 7.0 : 3.0) : opt.weight_upper;
  b.drop_beta_below = std::isnan(opt.drop_beta_below) ? (omp ? -7.0 : -std::numeric_limits<double>::infinity())
                                                      : opt.drop_beta_below;
  if (!(b.lower > 0.0) || !std::isfinite(b.lower))
    throw std::invalid_argument("compact: weight lower bound must be finite and > 0 (beta = log w)");
  if (!(b.upper > b.lower))
    throw std::invalid_argument("compact: weight upper bound must be above the lower bound");
  if (b.drop_beta_below == std::numeric_limits<double>::infinity())
    throw std::invalid_argument("compact: drop cutoff +infinity would drop every key");
  return b;
}

/// The quantities of the original cache the fits match, on the reference queries.
struct attention_targets {
  matrix_d mass;       ///< E (m x n): exp(s_it - M_i)
  fit_vector total;      ///< b (m): sum_t E_it
  matrix_d output;     ///< Y (m x d): original attention outputs
  matrix_d weights;    ///< P (m x n): original softmax weights
};

/// E, b, Y and P of the original cache on the reference queries (reference double
/// attention of compact/reference.hpp, no biases). No argument checks.
inline attention_targets make_targets(const matrix_f& keys, const matrix_f& values, const matrix_f& queries) {
  attention_targets t;
  const matrix_d s = attention_scores(queries, keys);
  t.mass = shifted_exp(s, row_max(s));
  t.total = row_sums(t.mass);
  t.weights.resize(t.mass.rows(), t.mass.cols());
  for (Eigen::Index i = 0; i < t.mass.rows(); ++i)
    for (Eigen::Index j = 0; j < t.mass.cols(); ++j) t.weights(i, j) = t.mass(i, j) / t.total(i);
  t.output = weighted_values(t.weights, values);
  return t;
}

/// Highest-RMS-attention selection: the `budget` tokens with the largest
/// sqrt(mean_i p_it^2), ascending.
inline std::vector<token_index> select_highest_rms_attention(const matrix_d& weights, Eigen::Index budget) {
  std::vector<double> score(static_cast<std::size_t>(weights.cols()));
  for (Eigen::Index t = 0; t < weights.cols(); ++t) {
    double acc = 0.0;
    for (Eigen::Index i = 0; i < weights.rows(); ++i) acc += weights(i, t) * weights(i, t);
    score[static_cast<std::size_t>(t)] = std::sqrt(acc / static_cast<double>(weights.rows()));
  }
  return top_k_tokens(score, budget, 0);
}

/// Columns `cols` of a (in that order).
inline matrix_d gather_columns(const matrix_d& a, const std::vector<token_index>& cols) {
  matrix_d out(a.rows(), static_cast<Eigen::Index>(cols.size()));
  for (std::size_t j = 0; j < cols.size(); ++j) out.col(static_cast<Eigen::Index>(j)) = a.col(cols[j]);
  return out;
}

namespace detail {

// OMP on min ||E_S w - b|| with w >= 0 (bounds == nullptr: Lawson-Hanson) or w in the
// box of *bounds (bvls), then, with bounds, the reference code's drop-and-refill rounds.
inline std::vector<token_index> omp_select(const matrix_d& mass, const fit_vector& total, Eigen::Index budget,
                                           int max_iterations, const weight_bounds* bounds, int drop_rounds) {
  const Eigen::Index m = mass.rows(), n = mass.cols();
  if (total.size() != m)
    throw std::invalid_argument("compact: OMP mass matrix has " + std::to_string(m) + " rows but " +
                                std::to_string(total.size()) + " totals");
  detail::check_budget(n, budget);
  std::vector<token_index> chosen;
  std::vector<char> used(static_cast<std::size_t>(n), 0);
  // The normal equations of the selected columns grow by one row and column per step
  // (same summation order as detail::gram), and each fit starts from the previous
  // step's solution: O(m k) + a few passive-set solves per step instead of a fresh fit.
  matrix_d g(0, 0);
  fit_vector atb(0), x(0);
  const double eps = std::numeric_limits<double>::epsilon();
  const double bnorm = fixed_norm(total);
  double trace = 0.0;
  const double* e = mass.data();
  fit_vector r = total;
  std::vector<double> corr(static_cast<std::size_t>(n));

  auto refit = [&]() {
    const Eigen::Index k = static_cast<Eigen::Index>(chosen.size());
    const double tol = 10.0 * eps * static_cast<double>(std::max(m, k)) * std::sqrt(trace) * bnorm;
    x = bounds ? bvls_normal(g, atb, bounds->lower, bounds->upper, max_iterations, tol, &x).x
               : nnls_normal(g, atb, max_iterations, tol, &x).x;
    for (Eigen::Index i = 0; i < m; ++i) {
      double ax = 0.0;
      for (Eigen::Index l = 0; l < k; ++l) ax += e[i * n + chosen[static_cast<std::size_t>(l)]] * x(l);
      r(i) = total(i) - ax;
    }
  };
  // Appends column `best` to the normal equations (x starts at 0, or at the lower bound).
  auto append = [&](token_index best) {
    used[static_cast<std::size_t>(best)] = 1;
    chosen.push_back(best);
    const Eigen::Index k = static_cast<Eigen::Index>(chosen.size());
    g.conservativeResize(k, k);
    atb.conservativeResize(k);
    x.conservativeResize(k);
    x(k - 1) = bounds ? bounds->lower : 0.0;
    for (Eigen::Index l = 0; l < k; ++l) {
      const token_index jl = chosen[static_cast<std::size_t>(l)];
      double acc = 0.0;
      for (Eigen::Index i = 0; i < m; ++i) acc += e[i * n + jl] * e[i * n + best];
      g(l, k - 1) = acc;
      g(k - 1, l) = acc;
    }
    double acc = 0.0;
    for (Eigen::Index i = 0; i < m; ++i) acc += e[i * n + best] * total(i);
    atb(k - 1) = acc;
    trace += g(k - 1, k - 1);
  };
  // Greedy steps until `budget` columns are chosen or none is left.
  auto fill = [&]() {
    while (static_cast<Eigen::Index>(chosen.size()) < budget) {
      // <E_j, r> for every j, accumulated row by row (each sum in ascending i, as a
      // column-by-column loop would; row order reads E contiguously).
      std::fill(corr.begin(), corr.end(), 0.0);
      for (Eigen::Index i = 0; i < m; ++i) {
        const double ri = r(i);
        const double* ei = e + i * n;
        for (Eigen::Index j = 0; j < n; ++j) corr[static_cast<std::size_t>(j)] += ei[j] * ri;
      }
      token_index best = -1;
      double best_corr = -std::numeric_limits<double>::infinity();
      for (Eigen::Index j = 0; j < n; ++j)
        if (!used[static_cast<std::size_t>(j)] && (best < 0 || corr[static_cast<std::size_t>(j)] > best_corr)) {
          best_corr = corr[static_cast<std::size_t>(j)];
          best = j;
        }
      if (best < 0) return;
      append(best);
      refit();
    }
  };
  fill();
  if (!bounds || !(bounds->drop_beta_below > -std::numeric_limits<double>::infinity())) return chosen;
  // Drop-and-refill (reference code, AM-OMP): keys whose beta = log w fell below the
  // cutoff carry almost no mass; they are excluded for good (used stays set) and the
  // budget is refilled greedily.
  const double w_min = kvq::math::exp(bounds->drop_beta_below);
  for (int round = 0; round < drop_rounds; ++round) {
    std::vector<Eigen::Index> live;
    for (Eigen::Index l = 0; l < static_cast<Eigen::Index>(chosen.size()); ++l)
      if (x(l) >= w_min) live.push_back(l);
    if (live.size() == chosen.size()) break;
    std::vector<token_index> kept_cols;
    for (Eigen::Index l : live) kept_cols.push_back(chosen[static_cast<std::size_t>(l)]);
    const fit_vector x_live = [&] {
      fit_vector v(static_cast<Eigen::Index>(live.size()));
      for (std::size_t l = 0; l < live.size(); ++l) v(static_cast<Eigen::Index>(l)) = x(live[l]);
      return v;
    }();
    chosen.clear();
    g.resize(0, 0);
    atb.resize(0);
    x.resize(0);
    trace = 0.0;
    for (token_index c : kept_cols) append(c);
    x = x_live;
    if (!chosen.empty()) {
      refit();
    } else {
      r = total;
    }
    fill();
  }
  return chosen;
}

}  // namespace detail

/// OMP selection on min ||E_S w - b||, w >= 0 (Lawson-Hanson): the columns in the order
/// chosen.
/// \throws std::invalid_argument if total's size differs from mass.rows(), or budget is
///         < 1 or > mass.cols().
inline std::vector<token_index> select_orthogonal_matching_pursuit(const matrix_d& mass, const fit_vector& total,
                                                                   Eigen::Index budget, int nnls_max_iterations = 0) {
  return detail::omp_select(mass, total, budget, nnls_max_iterations, nullptr, 0);
}

/// OMP selection with the weight fit of `opt`: exact (as the overload above) or bounded
/// (bvls in the box of resolve_weight_bounds(opt), then up to opt.drop_rounds rounds
/// that drop keys with beta below the cutoff and refill the budget). The columns in the
/// order chosen (after a drop, the survivors first); fewer than `budget` only when the
/// drops leave too few columns.
/// \throws std::invalid_argument as the overload above, or if the bounds are invalid.
inline std::vector<token_index> select_orthogonal_matching_pursuit(const matrix_d& mass, const fit_vector& total,
                                                                   Eigen::Index budget,
                                                                   const attention_matching_options& opt) {
  if (opt.fit == weight_fit::exact) return detail::omp_select(mass, total, budget, opt.nnls_max_iterations, nullptr, 0);
  attention_matching_options o = opt;
  o.selection = key_selection::orthogonal_matching_pursuit;
  const weight_bounds b = resolve_weight_bounds(o);
  return detail::omp_select(mass, total, budget, opt.nnls_max_iterations, &b, opt.drop_rounds);
}

namespace detail {

inline void check_options(const attention_matching_options& opt) {
  if (!(opt.weight_floor > 0.0)) throw std::invalid_argument("compact: weight floor must be > 0");
  if (!(opt.value_ridge >= 0.0)) throw std::invalid_argument("compact: value ridge must be >= 0");
  if (opt.fit == weight_fit::bounded) {
    (void)resolve_weight_bounds(opt);
    if (opt.drop_rounds < 0) throw std::invalid_argument("compact: drop rounds must be >= 0");
  }
}

}  // namespace detail

/// The fitted attention-mass weights of kept keys.
struct mass_fit {
  fit_vector weight;        ///< w (after the floor, exact fit)
  std::vector<float> beta;  ///< float(log w), as stored
  /// ||A w - b|| / ||b|| with the floored w (||A w - b|| when b = 0).
  double relative_residual = 0.0;
  /// Outer iterations of the NNLS or bvls.
  int iterations = 0;
  /// Weights at a bound (bounded fit) or raised to the floor (exact fit).
  int clamped = 0;
};

/// Fits w in min ||A w - b|| (A: m x t masses of the kept keys, b: m totals): bounded
/// (bvls in the box of resolve_weight_bounds(opt); `clamped` counts the weights at
/// either bound) or exact (Lawson-Hanson NNLS, w >= 0; `clamped` counts the weights
/// raised to opt.weight_floor).
/// \throws std::invalid_argument if opt.weight_floor is not > 0 (exact), the bounds are
///         invalid (bounded), or the system is malformed (sizes disagree, no columns).
inline mass_fit fit_mass(const matrix_d& kept_mass, const fit_vector& total, const attention_matching_options& opt) {
  mass_fit f;
  if (opt.fit == weight_fit::bounded) {
    const weight_bounds b = resolve_weight_bounds(opt);
    const bvls_result sol = bvls(kept_mass, total, b.lower, b.upper, opt.nnls_max_iterations);
    f.iterations = sol.iterations;
    f.weight = sol.x;
    f.clamped = sol.at_lower + sol.at_upper;
  } else {
    if (!(opt.weight_floor > 0.0)) throw std::invalid_argument("compact: weight floor must be > 0");
    const nnls_result sol = nnls(kept_mass, total, opt.nnls_max_iterations);
    f.iterations = sol.iterations;
    f.weight = sol.x;
    for (Eigen::Index j = 0; j < sol.x.size(); ++j)
      if (!(f.weight(j) > opt.weight_floor)) {
        f.weight(j) = opt.weight_floor;
        ++f.clamped;
      }
  }
  f.beta.resize(static_cast<std::size_t>(f.weight.size()));
  for (Eigen::Index j = 0; j < f.weight.size(); ++j)
    f.beta[static_cast<std::size_t>(j)] = static_cast<float>(kvq::math::log(f.weight(j)));
  const double bn = fixed_norm(total);
  const double rn = fixed_norm(detail::times(kept_mass, f.weight) - total);
  f.relative_residual = bn > 0.0 ? rn / bn : rn;
  return f;
}

/// The refitted values of kept keys.
struct value_fit {
  matrix_f values;  ///< t x d, float
  /// Numerical rank of the (ridge-augmented) system.
  int rank = 0;
  /// Column count t of the system.
  int columns = 0;
  /// True when the system was rank-deficient or the solution not finite (in double or
  /// in float); `values` are then the kept tokens' original values.
  bool fallback = false;
};

/// min ||X C - Y||^2 + lambda ||C - V_kept||^2 with lambda = ridge * ||X||_F^2 / t.
/// \throws std::invalid_argument if ridge is negative or NaN, or the shapes of x, y and
///         kept_values disagree.
inline value_fit fit_values(const matrix_d& x, const matrix_d& y, const matrix_f& kept_values, double ridge) {
  if (!(ridge >= 0.0)) throw std::invalid_argument("compact: value ridge must be >= 0");
  if (x.rows() != y.rows() || x.cols() != kept_values.rows() || y.cols() != kept_values.cols())
    throw std::invalid_argument("compact: value fit shapes disagree");
  const Eigen::Index m = x.rows(), t = x.cols(), d = y.cols();
  const double lambda = ridge * fixed_squared_norm(x) / static_cast<double>(t);
  const double sl = std::sqrt(lambda);
  const Eigen::Index extra = lambda > 0.0 ? t : 0;
  matrix_d a = matrix_d::Zero(m + extra, t);
  matrix_d rhs(m + extra, d);
  a.topRows(m) = x;
  rhs.topRows(m) = y;
  for (Eigen::Index j = 0; j < extra; ++j) {
    a(m + j, j) = sl;
    for (Eigen::Index c = 0; c < d; ++c) rhs(m + j, c) = sl * static_cast<double>(kept_values(j, c));
  }
  const qr_solution qr = solve_least_squares_qr(a, rhs);
  value_fit f;
  f.rank = qr.rank;
  f.columns = static_cast<int>(t);
  if (qr.rank < t) {
    f.fallback = true;
  } else {
    const matrix_d& c = qr.x;
    if (!c.allFinite()) {
      f.fallback = true;
    } else {
      f.values = c.cast<float>();
      if (!f.values.allFinite()) f.fallback = true;  // finite double, float overflow
    }
  }
  if (f.fallback) f.values = kept_values;
  return f;
}

namespace detail {

// The fits of fit_compacted_cache and attention_matching for checked arguments and precomputed targets.
inline compaction_result fit_to_targets(const matrix_f& keys, const matrix_f& values, const matrix_f& queries,
                                        const attention_targets& tg, std::vector<token_index> kept,
                                        const attention_matching_options& opt) {
  const mass_fit mf = fit_mass(gather_columns(tg.mass, kept), tg.total, opt);

  compaction_result r;
  r.keys = gather_rows(keys, kept);
  r.beta = mf.beta;
  const matrix_f kept_values = gather_rows(values, kept);
  // X with the stored float beta: the values are fitted to what the evaluator computes.
  const matrix_d x = softmax_weights(attention_scores(queries, r.keys, r.beta));
  const value_fit vf = fit_values(x, tg.output, kept_values, opt.value_ridge);
  r.values = vf.values;
  r.kept = std::move(kept);

  fit_diagnostics& dg = r.diagnostics;
  dg.mass_residual = mf.relative_residual;
  dg.nnls_iterations = mf.iterations;
  dg.clamped_weights = mf.clamped;
  dg.value_rank = vf.rank;
  dg.value_columns = vf.columns;
  dg.value_fallbacks = vf.fallback ? 1 : 0;
  const double yn = fixed_norm(tg.output);
  const double en = fixed_norm(weighted_values(x, r.values) - tg.output);
  dg.output_residual = yn > 0.0 ? en / yn : en;
  return r;
}

}  // namespace detail

/// Fits beta and values for a given subset `kept` (ascending, distinct) of the tokens.
/// \throws std::invalid_argument if the options are invalid (weight floor not > 0,
///         negative ridge), the cache is empty, K and V disagree or are not finite, kept is
///         empty, larger than the cache, out of range or not ascending and distinct, or
///         there are fewer reference queries than kept tokens (or they disagree with K on
///         head_dim or are not finite).
inline compaction_result fit_compacted_cache(const matrix_f& keys, const matrix_f& values,
                                             const matrix_f& queries, std::vector<token_index> kept,
                                             const attention_matching_options& opt = {}) {
  detail::check_options(opt);
  detail::check_cache(keys, values);
  const Eigen::Index n = keys.rows();
  detail::check_budget(n, static_cast<Eigen::Index>(kept.size()));
  detail::check_queries(keys, queries, static_cast<Eigen::Index>(kept.size()));
  for (std::size_t j = 0; j < kept.size(); ++j) {
    if (kept[j] < 0 || kept[j] >= n) throw std::invalid_argument("compact: kept token index out of range");
    if (j > 0 && kept[j] <= kept[j - 1]) throw std::invalid_argument("compact: kept tokens must be ascending and distinct");
  }
  return detail::fit_to_targets(keys, values, queries, make_targets(keys, values, queries), std::move(kept), opt);
}


/// Attention Matching: select `budget` keys, fit beta (NNLS) and values (least squares).
/// Needs at least `budget` reference queries (otherwise both fits are underdetermined).
/// \throws std::invalid_argument if the options are invalid, the cache is empty, K and V
///         disagree or are not finite, budget is < 1 or exceeds the cache, or there are
///         fewer than `budget` reference queries (or they disagree with K on head_dim or
///         are not finite).
inline compaction_result attention_matching(const matrix_f& keys, const matrix_f& values,
                                            const matrix_f& queries, Eigen::Index budget,
                                            const attention_matching_options& opt = {}) {
  detail::check_options(opt);
  detail::check_cache(keys, values);
  detail::check_budget(keys.rows(), budget);
  detail::check_queries(keys, queries, budget);
  const attention_targets tg = make_targets(keys, values, queries);
  std::vector<token_index> kept =
      opt.selection == key_selection::highest_rms_attention
          ? select_highest_rms_attention(tg.weights, budget)
          : select_orthogonal_matching_pursuit(tg.mass, tg.total, budget, opt);
  std::sort(kept.begin(), kept.end());
  return detail::fit_to_targets(keys, values, queries, tg, std::move(kept), opt);
}

}  // namespace compact
}  // namespace kvq
