/// \file
/// kvq/core/error.hpp — the error helper of the host API layers. Callers' mistakes
/// (shapes, sizes, names, bad files) raise std::invalid_argument with a message that
/// names the function and the problem: "kvq::attention::compare: Q is 4x64, K is 8x128".
/// Code that also runs on the device never throws; only the host layers use this.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

namespace kvq {
namespace detail {

[[noreturn]] inline void fail(const std::string& where, const std::string& what) {
  throw std::invalid_argument(where + ": " + what);
}

inline std::string shape_string(const char* name, std::ptrdiff_t rows, std::ptrdiff_t cols) {
  return std::string(name) + " is " + std::to_string(rows) + "x" + std::to_string(cols);
}

/// "<name> is RxC" for any matrix-like type with rows() and cols().
template <class M>
std::string shape_of(const char* name, const M& m) {
  return shape_string(name, static_cast<std::ptrdiff_t>(m.rows()), static_cast<std::ptrdiff_t>(m.cols()));
}

}  // namespace detail
}  // namespace kvq
