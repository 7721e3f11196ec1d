// kvq/inject/types.hpp — the host matrix types of the synthetic-data and attention
// layers: row-major Eigen matrices, one row per token (or query), one column per
// head-dimension channel.
#pragma once

#include <cstddef>
#include <sstream>
#include <stdexcept>
#include <string>

#include <Eigen/Core>

namespace kvq {
namespace inject {

using matrix_f = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using matrix_d = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

namespace detail {

inline std::string shape_string(const char* name, std::ptrdiff_t rows, std::ptrdiff_t cols) {
  std::ostringstream os;
  os << name << " is " << rows << "x" << cols;
  return os.str();
}

template <class M>
std::string shape_of(const char* name, const M& m) {
  return shape_string(name, static_cast<std::ptrdiff_t>(m.rows()), static_cast<std::ptrdiff_t>(m.cols()));
}

[[noreturn]] inline void fail(const std::string& where, const std::string& what) {
  throw std::invalid_argument(where + ": " + what);
}

}  // namespace detail
}  // namespace inject
}  // namespace kvq
