/// \file
/// kvq/metrics/workspace.hpp — caller-owned scratch memory for the per-query metrics.
///
/// The rank and top-k metrics sort permutations of the keys and so need O(n) scratch.
/// The KVQ_HD entry points take a workspace_view (plain pointers, no allocation) so the
/// same code runs on the device; the host entry points allocate a workspace for you.
/// To evaluate many queries, create one kvq::metrics::workspace for the largest n and
/// pass its view() to every call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <kvq/config.hpp>
#include <kvq/metrics/detail/sort.hpp>

/// Per-query metrics between a reference and an emulated attention distribution (rank
/// correlations, top-k, distribution distances, needle and output error) and their
/// aggregation over queries. Every sum is a fixed-shape tree sum and every logarithm and
/// square root is kvq's own, so a metric has the same bits on every backend and for every
/// thread count.
namespace kvq::metrics {

/// Key index type of the workspaces; n must be < 2^32.
using index_t = detail::index_t;  // key indices: n must be < 2^32

/// Scratch for up to `capacity` keys: four index arrays, one int64 array, one double array.
struct workspace_view {
  /// Index scratch array, `capacity` entries.
  index_t* a = nullptr;
  /// Index scratch array, `capacity` entries.
  index_t* b = nullptr;
  /// Index scratch array, `capacity` entries.
  index_t* c = nullptr;
  /// Index scratch array, `capacity` entries.
  index_t* d = nullptr;
  /// 64-bit integer scratch array, `capacity` entries.
  std::int64_t* i64 = nullptr;
  /// Double scratch array, `capacity` entries.
  double* f64 = nullptr;
  /// Number of keys every array can hold.
  std::size_t capacity = 0;
};

/// Host owner of the scratch arrays.
/// Holds n-key arrays for all metrics; reuse one for many queries.
class workspace {
 public:
  /// Empty workspace (capacity 0).
  workspace() = default;
  /// Workspace for up to n keys.
  explicit workspace(std::size_t n) { reserve(n); }
  /// Grows the arrays to hold n keys; never shrinks.
  void reserve(std::size_t n) {
    if (n <= a_.size()) return;
    a_.resize(n);
    b_.resize(n);
    c_.resize(n);
    d_.resize(n);
    i64_.resize(n);
    f64_.resize(n);
  }
  /// Number of keys the arrays can hold.
  std::size_t capacity() const { return a_.size(); }
  /// Pointers to the arrays; valid until the next reserve() that grows them.
  workspace_view view() {
    return workspace_view{a_.data(), b_.data(), c_.data(), d_.data(), i64_.data(), f64_.data(), a_.size()};
  }

 private:
  std::vector<index_t> a_, b_, c_, d_;
  std::vector<std::int64_t> i64_;
  std::vector<double> f64_;
};

}  // namespace kvq::metrics
