/// \file
/// kvq/device/math.hpp — kvq's deterministic elementary functions (kvq/core/math.hpp)
/// applied element-wise on any Thrust device system.
///
/// kvq::math's functions are built from IEEE basic operations and integer bit work only,
/// so the host and the GPU compute the same bits (nvcc with --fmad=false, host compilers
/// with -ffp-contract=off; the explicit fma calls are fused on both). CUDA's own expf /
/// __expf go through the approximate ex2 unit and never match a CPU; use these instead.
#pragma once

#include <cstdint>
#include <iterator>
#include <type_traits>

#include <kvq/core/math.hpp>
#include <kvq/config.hpp>
#include <kvq/device/system.hpp>

#include <thrust/transform.h>

namespace kvq {
namespace device {

/// The elementary functions of kvq::math that apply() evaluates.
enum class elementary : unsigned char { exp, exp2, log, log2, sin, cos };

/// Lower-case name of f ("exp", "exp2", "log", "log2", "sin", "cos").
inline constexpr const char* to_string(elementary f) noexcept {
  switch (f) {
    case elementary::exp: return "exp";
    case elementary::exp2: return "exp2";
    case elementary::log: return "log";
    case elementary::log2: return "log2";
    case elementary::sin: return "sin";
    case elementary::cos: return "cos";
  }
  return "?";
}

/// y = f(x) with kvq::math (T = float: all six; T = double: exp, exp2, log, log2;
/// sin/cos of a double are computed in float, as kvq::math has them for float only).
template <class T>
struct elementary_fn {
  /// The function to evaluate.
  elementary f = elementary::exp;
  /// f(x) with kvq::math.
  KVQ_HD T operator()(T x) const {
    switch (f) {
      case elementary::exp: return kvq::math::exp(x);
      case elementary::exp2: return kvq::math::exp2(x);
      case elementary::log: return kvq::math::log(x);
      case elementary::log2: return kvq::math::log2(x);
      case elementary::sin: return static_cast<T>(kvq::math::sin(static_cast<float>(x)));
      case elementary::cos: return static_cast<T>(kvq::math::cos(static_cast<float>(x)));
    }
    return x;
  }
};

/// out[i] = f(first[i]) for i in [0, last - first).
template <class InIt, class OutIt>
OutIt apply(elementary f, InIt first, InIt last, OutIt out) {
  using T = typename std::iterator_traits<InIt>::value_type;
  static_assert(std::is_same<T, float>::value || std::is_same<T, double>::value,
                "kvq::device::apply: float or double inputs");
  return thrust::transform(first, last, out, elementary_fn<T>{f});
}

}  // namespace device
}  // namespace kvq
