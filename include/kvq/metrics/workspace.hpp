// kvq/metrics/workspace.hpp — caller-owned scratch memory for the per-query metrics.
//
// The rank and top-k metrics sort permutations of the keys and so need O(n) scratch.
// The KVQ_HD entry points take a workspace_view (plain pointers, no allocation) so the
// same code runs on the device; the host entry points allocate a workspace for you.
// To evaluate many queries, create one kvq::metrics::workspace for the largest n and
// pass its view() to every call.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <kvq/config.hpp>
#include <kvq/metrics/detail/sort.hpp>

namespace kvq::metrics {

using index_t = detail::index_t;  // key indices: n must be < 2^32

// Scratch for up to `capacity` keys: four index arrays, one int64 array, one double array.
struct workspace_view {
  index_t* a = nullptr;
  index_t* b = nullptr;
  index_t* c = nullptr;
  index_t* d = nullptr;
  std::int64_t* i64 = nullptr;
  double* f64 = nullptr;
  std::size_t capacity = 0;
};

// Host owner of the scratch arrays.
class workspace {
 public:
  workspace() = default;
  explicit workspace(std::size_t n) { reserve(n); }
  void reserve(std::size_t n) {
    if (n <= a_.size()) return;
    a_.resize(n);
    b_.resize(n);
    c_.resize(n);
    d_.resize(n);
    i64_.resize(n);
    f64_.resize(n);
  }
  std::size_t capacity() const { return a_.size(); }
  workspace_view view() {
    return workspace_view{a_.data(), b_.data(), c_.data(), d_.data(), i64_.data(), f64_.data(), a_.size()};
  }

 private:
  std::vector<index_t> a_, b_, c_, d_;
  std::vector<std::int64_t> i64_;
  std::vector<double> f64_;
};

}  // namespace kvq::metrics
