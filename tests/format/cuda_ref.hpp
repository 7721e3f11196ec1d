// tests/format/cuda_ref.hpp — CUDA's host conversion functions as ground truth.
//
// cuda_fp8.h / cuda_fp6.h / cuda_fp4.h compile with the host compiler and need no GPU.
// Rounding modes each function accepts (checked in the CUDA 13 headers; the host paths
// assert() the mode):
//   __nv_cvt_{float,double}_to_fp8   round-to-nearest-even only; __NV_SATFINITE / __NV_NOSAT
//   __nv_cvt_{float,double}_to_fp6   cudaRoundNearest, cudaRoundZero (always saturating)
//   __nv_cvt_{float,double}_to_fp4   cudaRoundNearest, cudaRoundZero (always saturating)
//   __nv_cvt_{float,double}_to_e8m0  cudaRoundZero, cudaRoundPosInf; __NV_SATFINITE / __NV_NOSAT
// Only compiled when the build defines KVQ_HAVE_CUDA_ORACLE (CUDA_ORACLE tests).
#pragma once

#include <cstdint>
#include <cstring>

#include "oracle.hpp"

#if defined(KVQ_HAVE_CUDA_ORACLE)
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wconversion"
#pragma GCC diagnostic ignored "-Wshadow"
#pragma GCC diagnostic ignored "-Wunused-parameter"
#pragma GCC diagnostic ignored "-Wpedantic"
#endif
#include <cuda_fp4.h>
#include <cuda_fp6.h>
#include <cuda_fp8.h>
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#endif

namespace kvqtest {

#if defined(KVQ_HAVE_CUDA_ORACLE)
inline constexpr bool have_cuda_oracle = true;

// One CUDA-comparable configuration: format, rounding, overflow.
enum class cuda_fn { fp8_e4m3, fp8_e5m2, fp6_e2m3, fp6_e3m2, fp4_e2m1, e8m0 };

inline cudaRoundMode cuda_round(rmode r) {
  switch (r) {
    case rmode::toward_zero: return cudaRoundZero;
    case rmode::up: return cudaRoundPosInf;
    case rmode::down: return cudaRoundMinInf;
    default: return cudaRoundNearest;
  }
}
inline __nv_saturation_t cuda_sat(ovf o) { return o == ovf::satfinite ? __NV_SATFINITE : __NV_NOSAT; }

template <cuda_fn F, class X>
inline unsigned cuda_convert(X x, cudaRoundMode r, __nv_saturation_t s) {
  if constexpr (F == cuda_fn::fp8_e4m3 || F == cuda_fn::fp8_e5m2) {
    (void)r;
    constexpr auto k = F == cuda_fn::fp8_e4m3 ? __NV_E4M3 : __NV_E5M2;
    if constexpr (sizeof(X) == 4) {
      return __nv_cvt_float_to_fp8(x, s, k);
    } else {
      return __nv_cvt_double_to_fp8(x, s, k);
    }
  } else if constexpr (F == cuda_fn::fp6_e2m3 || F == cuda_fn::fp6_e3m2) {
    (void)s;
    constexpr auto k = F == cuda_fn::fp6_e2m3 ? __NV_E2M3 : __NV_E3M2;
    if constexpr (sizeof(X) == 4) {
      return __nv_cvt_float_to_fp6(x, k, r);
    } else {
      return __nv_cvt_double_to_fp6(x, k, r);
    }
  } else if constexpr (F == cuda_fn::fp4_e2m1) {
    (void)s;
    if constexpr (sizeof(X) == 4) {
      return __nv_cvt_float_to_fp4(x, __NV_E2M1, r);
    } else {
      return __nv_cvt_double_to_fp4(x, __NV_E2M1, r);
    }
  } else {
    if constexpr (sizeof(X) == 4) {
      return __nv_cvt_float_to_e8m0(x, s, r);
    } else {
      return __nv_cvt_double_to_e8m0(x, s, r);
    }
  }
}
#else
inline constexpr bool have_cuda_oracle = false;
#endif

}  // namespace kvqtest
