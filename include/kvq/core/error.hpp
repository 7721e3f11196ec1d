/// \file
/// kvq/core/error.hpp — the error helper of the host API layers. Callers' mistakes
/// (shapes, sizes, names, bad files) raise std::invalid_argument with a message that
/// names the function and the problem: "kvq::attention::compare: Q is 4x64, K is 8x128".
/// Code that also runs on the device never throws; only the host layers use this.
/// checked_mul / checked_add: the one overflow check of every size and byte count.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
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

/// a * b for a size or byte count, or std::invalid_argument naming the quantity
/// ("kvq::block::quantize_rows: rows x cols = 1152921504606846980 x 16 overflows
/// std::size_t") instead of a product that wraps around silently. Host API layers call
/// it before allocating or indexing anything with the product.
inline std::size_t checked_mul(std::size_t a, std::size_t b, const std::string& what) {
  if (a != 0 && b > std::numeric_limits<std::size_t>::max() / a)
    throw std::invalid_argument(what + " = " + std::to_string(a) + " x " + std::to_string(b) +
                                " overflows std::size_t (" + std::to_string(std::numeric_limits<std::size_t>::max()) +
                                ")");
  return a * b;
}

/// a + b for sizes, with the same check.
inline std::size_t checked_add(std::size_t a, std::size_t b, const std::string& what) {
  if (b > std::numeric_limits<std::size_t>::max() - a)
    throw std::invalid_argument(what + " = " + std::to_string(a) + " + " + std::to_string(b) +
                                " overflows std::size_t (" + std::to_string(std::numeric_limits<std::size_t>::max()) +
                                ")");
  return a + b;
}

/// "<name> is RxC" for any matrix-like type with rows() and cols().
template <class M>
std::string shape_of(const char* name, const M& m) {
  return shape_string(name, static_cast<std::ptrdiff_t>(m.rows()), static_cast<std::ptrdiff_t>(m.cols()));
}

}  // namespace detail
}  // namespace kvq
