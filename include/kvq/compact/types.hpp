/// \file
/// kvq/compact/types.hpp — the matrix types, budgets and result of KV compaction for
/// one attention head.
///
/// A head's cache is K, V (n tokens x head_dim d, row-major float) and the compaction
/// is judged on reference queries Qref (m x d). A compaction keeps `kept` of the n
/// tokens (indices into the original cache, ascending), possibly with refitted values
/// and a per-key additive score bias beta (Zweiger, Fu, Guo, Kim, "Fast KV Compaction
/// via Attention Matching", arXiv 2602.16284):
///
///     s_j(q) = q . C_k[j] / sqrt(d) + beta_j,   o(q) = sum_j softmax_j(s(q)) C_v[j]
///
/// Eviction baselines keep the original rows and beta = 0.
///
/// The compaction is a host-side reference procedure: fitting runs in double on the
/// host and the result is stored in float (beta, values), the precision a cache holds
/// before any quantization.
#pragma once

#include <cstddef>
#include <vector>

#include <Eigen/Core>

#include <kvq/config.hpp>
#include <kvq/core/matrix.hpp>

namespace kvq {
/// KV-cache compaction of one attention head: Attention Matching (keys chosen, biases
/// and values fitted on reference queries) and eviction baselines (StreamingLLM, H2O,
/// SnapKV, random), the reference double attention they are judged with, and
/// compaction followed by quantization. Host-side reference procedures, deterministic.
namespace compact {

/// K, V, Q of one head are kvq::matrix_f (tokens x head_dim, core/matrix.hpp); fits and
/// the reference evaluator work in kvq::matrix_d.
/// A double column vector (masses, totals, NNLS solutions).
using fit_vector = Eigen::Matrix<double, Eigen::Dynamic, 1>;
/// An index of a token in the original (uncompacted) cache.
using token_index = Eigen::Index;

/// Diagnostics of a fit, for the caller to report (wall time is measured by the caller).
struct fit_diagnostics {
  /// ||A w - b|| / ||b|| of the attention-mass fit on the reference queries (0 for
  /// eviction, where nothing is fitted).
  double mass_residual = 0.0;
  /// ||X C_v - Y||_F / ||Y||_F of the value fit on the reference queries (the output
  /// error the fit could not remove; computed with the stored float beta and values).
  double output_residual = 0.0;
  /// Outer iterations of the weight fit (Lawson-Hanson NNLS or bvls) for the final beta.
  int nnls_iterations = 0;
  /// Kept keys whose fitted weight w = exp(beta) sits at a bound of the bounded fit, or
  /// (exact fit) was at or below the floor and was raised to it (beta = log(floor)):
  /// such a key carries (almost) no mass, or as much as the bound allows.
  int clamped_weights = 0;
  /// Numerical rank of the (ridge-augmented) value system and its column count.
  int value_rank = 0;
  /// Column count of that system.
  int value_columns = 0;
  /// 1 when the value fit was singular (rank-deficient without ridge) or produced a
  /// non-finite result, and the kept tokens' original values were used instead.
  int value_fallbacks = 0;
};

/// A compacted head.
struct compaction_result {
  std::vector<token_index> kept;  ///< ascending indices into the original cache
  matrix_f keys;               ///< kept x d (rows of the original K)
  matrix_f values;             ///< kept x d (refitted, or the original rows)
  std::vector<float> beta;        ///< kept additive score biases (0 for eviction)
  /// Fit diagnostics (all zero for eviction).
  fit_diagnostics diagnostics;

  /// Number of kept tokens.
  Eigen::Index size() const { return static_cast<Eigen::Index>(kept.size()); }
};

}  // namespace compact
}  // namespace kvq
