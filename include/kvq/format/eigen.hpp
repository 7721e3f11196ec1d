/// \file
/// kvq/format/eigen.hpp — Eigen::NumTraits for kvq's value types, so that
/// `Eigen::MatrixXf::cast<kvq::e4m3>()` quantizes element-wise (nearest_even,
/// satfinite) and `.cast<float>()` decodes exactly.
#pragma once

#include <Eigen/Core>

#include <kvq/format/value.hpp>

namespace Eigen {
template <class Fmt>
struct NumTraits<kvq::minifloat<Fmt>> : GenericNumTraits<kvq::minifloat<Fmt>> {
  using Self = kvq::minifloat<Fmt>;
  using Real = Self;
  using NonInteger = Self;
  using Literal = Self;
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
  static Self epsilon() { return std::numeric_limits<Self>::epsilon(); }
  static Self dummy_precision() { return std::numeric_limits<Self>::epsilon(); }
  static Self highest() { return std::numeric_limits<Self>::max(); }
  static Self lowest() { return std::numeric_limits<Self>::lowest(); }
  static Self infinity() { return std::numeric_limits<Self>::infinity(); }
  static Self quiet_NaN() { return std::numeric_limits<Self>::quiet_NaN(); }
  static int digits10() { return 0; }
};
}  // namespace Eigen
