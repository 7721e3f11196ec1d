/// \file
/// kvq/compact/select.hpp — choosing k tokens by score, and building a compacted
/// cache from kept rows. Deterministic: ties go to the lower token index.
#pragma once

#include <algorithm>
#include <numeric>
#include <utility>
#include <vector>

#include <kvq/compact/types.hpp>

namespace kvq {
namespace compact {

/// The k tokens of [first, first + score.size()) with the highest scores (ties: the
/// lower index wins), returned ascending. score[i] belongs to token first + i.
inline std::vector<token_index> top_k_tokens(const std::vector<double>& score, Eigen::Index k,
                                             token_index first = 0) {
  std::vector<token_index> order(score.size());
  std::iota(order.begin(), order.end(), token_index{0});
  const auto kk = static_cast<std::size_t>(std::min<Eigen::Index>(k, static_cast<Eigen::Index>(score.size())));
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(kk), order.end(),
                    [&](token_index a, token_index b) {
                      const double sa = score[static_cast<std::size_t>(a)], sb = score[static_cast<std::size_t>(b)];
                      return sa > sb || (sa == sb && a < b);
                    });
  order.resize(kk);
  for (auto& t : order) t += first;
  std::sort(order.begin(), order.end());
  return order;
}

/// Rows `kept` of m (kept ascending).
inline matrix_f gather_rows(const matrix_f& m, const std::vector<token_index>& kept) {
  matrix_f out(static_cast<Eigen::Index>(kept.size()), m.cols());
  for (std::size_t j = 0; j < kept.size(); ++j) out.row(static_cast<Eigen::Index>(j)) = m.row(kept[j]);
  return out;
}

/// An eviction result: the kept tokens' original keys and values, beta = 0.
inline compaction_result evicted_cache(const matrix_f& keys, const matrix_f& values,
                                       std::vector<token_index> kept) {
  compaction_result r;
  r.keys = gather_rows(keys, kept);
  r.values = gather_rows(values, kept);
  r.beta.assign(kept.size(), 0.0f);
  r.kept = std::move(kept);
  return r;
}

}  // namespace compact
}  // namespace kvq
