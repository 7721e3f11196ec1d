/// \file
/// kvq/format/formats.hpp — the named formats as instances of minifloat_format.
///
/// References: OCP 8-bit Floating Point Specification (OFP8) rev 1.0 (e4m3 "fn",
/// e5m2); OCP Microscaling Formats (MX) v1.0 (e3m2, e2m3, e2m1, E8M0 scale);
/// NVIDIA PTX ISA, "Alternate Floating Point Data Formats" (ue8m0, ue4m3 for
/// NVFP4 block scales); Graphcore/AMD fnuz formats (bias one larger, 0x80 = NaN),
/// as in ml_dtypes float8_e4m3fnuz / float8_e5m2fnuz / float8_e4m3b11fnuz.
#pragma once

#include <kvq/format/traits.hpp>

namespace kvq {
namespace fmt {
//                         signed exp man bias specials             subnormals
/// OCP OFP8 E4M3 ("fn"): bias 7, no Inf, S.1111.111 is NaN, max 448.
using e4m3 = minifloat_format<true, 4, 3, 7, specials::finite_nan>;   // max 448, NaN S.1111.111
/// OCP OFP8 E5M2: bias 15, IEEE Inf/NaN, max 57344.
using e5m2 = minifloat_format<true, 5, 2, 15, specials::ieee>;        // max 57344, IEEE Inf/NaN
/// OCP MX FP6 E3M2: bias 3, every code finite, max 28.
using e3m2 = minifloat_format<true, 3, 2, 3, specials::none>;         // FP6, max 28
/// OCP MX FP6 E2M3: bias 1, every code finite, max 7.5.
using e2m3 = minifloat_format<true, 2, 3, 1, specials::none>;         // FP6, max 7.5
/// OCP MX FP4 E2M1 (the NVFP4 element): bias 1, every code finite, max 6.
using e2m1 = minifloat_format<true, 2, 1, 1, specials::none>;         // FP4, max 6
/// UE8M0 MX block scale: unsigned, no mantissa, no subnormals or zero; 2^(e-127) for
/// e = 0..254 (2^-127..2^127), 0xFF is NaN.
using ue8m0 = minifloat_format<false, 8, 0, 127, specials::finite_nan, false>;  // 2^-127..2^127, 0xFF NaN
/// UE4M3, the NVFP4 block scale: E4M3 without the sign bit, max 448, 0x7F is NaN.
using ue4m3 = minifloat_format<false, 4, 3, 7, specials::finite_nan>;  // NVFP4 scale, max 448
/// E4M3 "fnuz" (Graphcore/AMD, ml_dtypes float8_e4m3fnuz): bias 8, no Inf, no -0,
/// 0x80 is the one NaN, max 240.
using e4m3fnuz = minifloat_format<true, 4, 3, 8, specials::fnuz>;     // max 240, 0x80 NaN
/// E5M2 "fnuz" (ml_dtypes float8_e5m2fnuz): bias 16, no Inf, no -0, 0x80 is the one NaN,
/// max 57344.
using e5m2fnuz = minifloat_format<true, 5, 2, 16, specials::fnuz>;    // max 57344, 0x80 NaN
/// E4M3 with bias 11, "fnuz" (ml_dtypes float8_e4m3b11fnuz, the TPU/Graphcore "b11"
/// variant): no Inf, no -0, 0x80 is the one NaN, max 30, smallest subnormal 2^-13.
using e4m3b11fnuz = minifloat_format<true, 4, 3, 11, specials::fnuz>;  // max 30, 0x80 NaN
}  // namespace fmt

/// Human-readable name of a format (for tables and reports).
template <class F>
constexpr const char* format_name() noexcept {
  using T = format_of_t<F>;
  if constexpr (std::is_same<T, fmt::e4m3>::value) return "e4m3";
  else if constexpr (std::is_same<T, fmt::e5m2>::value) return "e5m2";
  else if constexpr (std::is_same<T, fmt::e3m2>::value) return "e3m2";
  else if constexpr (std::is_same<T, fmt::e2m3>::value) return "e2m3";
  else if constexpr (std::is_same<T, fmt::e2m1>::value) return "e2m1";
  else if constexpr (std::is_same<T, fmt::ue8m0>::value) return "ue8m0";
  else if constexpr (std::is_same<T, fmt::ue4m3>::value) return "ue4m3";
  else if constexpr (std::is_same<T, fmt::e4m3fnuz>::value) return "e4m3fnuz";
  else if constexpr (std::is_same<T, fmt::e5m2fnuz>::value) return "e5m2fnuz";
  else if constexpr (std::is_same<T, fmt::e4m3b11fnuz>::value) return "e4m3b11fnuz";
  else return "custom";
}

}  // namespace kvq
