/// \file
/// kvq/compact/budget.hpp — token budgets from compaction ratios, and the argument
/// checks shared by the compaction entry points (host API: they throw
/// std::invalid_argument naming the problem).
#pragma once

#include <cmath>
#include <stdexcept>
#include <string>

#include <kvq/compact/types.hpp>

namespace kvq {
namespace compact {

/// Tokens kept when an n-token cache is compacted `ratio` times: floor(n / ratio),
/// and at least one. ratio = 1 keeps every token; ratio must lie in [1, n).
/// \throws std::invalid_argument if n < 1 or ratio is not in [1, n) (NaN included).
inline Eigen::Index budget_from_ratio(Eigen::Index n, double ratio) {
  if (n < 1) throw std::invalid_argument("compact: the cache has no tokens");
  if (!(ratio > 0.0)) throw std::invalid_argument("compact: compaction ratio must be > 0");
  if (ratio < 1.0) throw std::invalid_argument("compact: compaction ratio < 1 would keep more tokens than the cache has");
  if (ratio >= static_cast<double>(n))
    throw std::invalid_argument("compact: compaction ratio must be < the number of tokens (" + std::to_string(n) + ")");
  const double kept = std::floor(static_cast<double>(n) / ratio);
  return kept < 1.0 ? Eigen::Index{1} : static_cast<Eigen::Index>(kept);
}

namespace detail {

inline void check_cache(const matrix_f& keys, const matrix_f& values) {
  if (keys.rows() < 1) throw std::invalid_argument("compact: the cache has no tokens");
  if (keys.cols() < 1) throw std::invalid_argument("compact: head_dim must be >= 1");
  if (values.rows() != keys.rows())
    throw std::invalid_argument("compact: K and V disagree on the number of tokens (" + std::to_string(keys.rows()) +
                                " vs " + std::to_string(values.rows()) + ")");
  if (values.cols() != keys.cols())
    throw std::invalid_argument("compact: K and V disagree on head_dim (" + std::to_string(keys.cols()) + " vs " +
                                std::to_string(values.cols()) + ")");
  if (!keys.allFinite()) throw std::invalid_argument("compact: K has non-finite entries");
  if (!values.allFinite()) throw std::invalid_argument("compact: V has non-finite entries");
}

inline void check_queries(const matrix_f& keys, const matrix_f& queries, Eigen::Index needed) {
  if (queries.cols() != keys.cols())
    throw std::invalid_argument("compact: reference queries and K disagree on head_dim (" +
                                std::to_string(queries.cols()) + " vs " + std::to_string(keys.cols()) + ")");
  if (!queries.allFinite()) throw std::invalid_argument("compact: reference queries have non-finite entries");
  if (queries.rows() < needed)
    throw std::invalid_argument("compact: " + std::to_string(queries.rows()) + " reference queries, at least " +
                                std::to_string(needed) + " needed");
}

inline void check_budget(Eigen::Index n, Eigen::Index budget) {
  if (budget < 1) throw std::invalid_argument("compact: token budget must be >= 1");
  if (budget > n)
    throw std::invalid_argument("compact: token budget " + std::to_string(budget) + " exceeds the " +
                                std::to_string(n) + " tokens of the cache");
}

}  // namespace detail
}  // namespace compact
}  // namespace kvq
