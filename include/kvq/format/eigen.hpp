/// \file
/// kvq/format/eigen.hpp — Eigen::NumTraits for kvq's value types, so that
/// `Eigen::MatrixXf::cast<kvq::e4m3>()` quantizes element-wise (nearest_even,
/// satfinite) and `.cast<float>()` decodes exactly.
#pragma once

#include <Eigen/Core>

#include <kvq/format/value.hpp>

namespace Eigen {
template <class Fmt>
/// Eigen::NumTraits for kvq::minifloat, so Eigen matrices can hold minifloat values and
/// cast to and from them (costs are nominal; limits come from std::numeric_limits).
struct NumTraits<kvq::minifloat<Fmt>> : GenericNumTraits<kvq::minifloat<Fmt>> {
  /// The value type itself.
  using Self = kvq::minifloat<Fmt>;
  /// Real type (the value type: minifloats are real).
  using Real = Self;
  /// Non-integer type (the value type).
  using NonInteger = Self;
  /// Literal type (the value type).
  using Literal = Self;
  /// Nested type (the value type).
  using Nested = Self;
  enum {
    IsComplex = 0,
    IsInteger = 0,
    IsSigned = Fmt::is_signed ? 1 : 0,
    RequireInitialization = 0,
    ReadCost = 1,
    AddCost = 4,
    MulCost = 4
  };
  /// std::numeric_limits epsilon(), 2^-mantissa_bits.
  static Self epsilon() { return std::numeric_limits<Self>::epsilon(); }
  /// Comparison tolerance of Eigen's isApprox: epsilon().
  static Self dummy_precision() { return std::numeric_limits<Self>::epsilon(); }
  /// Largest finite value.
  static Self highest() { return std::numeric_limits<Self>::max(); }
  /// Most negative finite value.
  static Self lowest() { return std::numeric_limits<Self>::lowest(); }
  /// +Inf where the format has one (see std::numeric_limits).
  static Self infinity() { return std::numeric_limits<Self>::infinity(); }
  /// The canonical NaN where the format has one.
  static Self quiet_NaN() { return std::numeric_limits<Self>::quiet_NaN(); }
  /// 0, as std::numeric_limits::digits10.
  static int digits10() { return 0; }
};
}  // namespace Eigen
