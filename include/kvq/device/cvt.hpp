/// \file
/// kvq/device/cvt.hpp — the GPU's own conversion instructions, with the emulator as
/// the fallback wherever the compilation target lacks them.
///
/// Pair conversions (PTX ISA, "cvt"): for `cvt.rn.satfinite.e4m3x2.f32 d, a, b` the
/// value from a lands in the upper byte of d and b in the lower byte; the functions
/// below take (lo, hi) so that element 2i (lo) is the low byte, as cuda_fp8.hpp's
/// __nv_cvt_float2_to_fp8x2 does.
///
/// Availability (same guards as cuda_fp8.h / cuda_fp4.hpp / cuda_fp6.hpp):
///  - e4m3x2/e5m2x2 from f32 (satfinite only; PTX has no non-saturating form) and
///    f16x2 from e4m3x2/e5m2x2: __CUDA_ARCH__ >= 890 (sm_89, sm_90, ...).
///  - e2m1x2, e3m2x2, e2m3x2 (rn.satfinite), ue8m0x2 (rz/rp, with or without
///    satfinite) and their reverse conversions: only family-specific targets with
///    __CUDA_ARCH_FAMILY_SPECIFIC__ in [1000, 1300) (sm_100a/f, sm_103a, sm_110a,
///    sm_120a, ...), mirroring __CUDA_FP8_INTERNAL_CAN_RELY_ON_PTX_FOR_SHORTTYPESCVT__.
/// Everywhere else (host code, CPU backends, older or non-family targets) the
/// functions compute the same result with the emulator, kvq::encode / kvq::decode,
/// which is defined to equal CUDA's conversion functions.
///
/// The hardware and the host functions may still differ in corner cases the PTX
/// manual leaves open (e.g. the sign of a NaN result); tests/gpu checks every float
/// input on the GPU and reports any such difference instead of assuming it away.
#pragma once

#include <cstdint>

#include <kvq/config.hpp>
#include <kvq/core/float16.hpp>
#include <kvq/format/decode.hpp>
#include <kvq/format/encode.hpp>

/// 1 when this compilation pass has the sm_89+ FP8 cvt instructions (e4m3x2/e5m2x2
/// from f32, f16x2 from e4m3x2/e5m2x2), else 0.
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 890)
#define KVQ_HW_CVT_FP8 1
#else
#define KVQ_HW_CVT_FP8 0
#endif

/// 1 when this compilation pass has the family-specific (sm_100a/f ... sm_120a) cvt
/// instructions for e2m1x2, e3m2x2, e2m3x2 and ue8m0x2, else 0.
#if defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 1000) && defined(__CUDA_ARCH_FAMILY_SPECIFIC__) && \
    (__CUDA_ARCH_FAMILY_SPECIFIC__ >= 1000) && (__CUDA_ARCH_FAMILY_SPECIFIC__ < 1300)
#define KVQ_HW_CVT_SHORT 1
#else
#define KVQ_HW_CVT_SHORT 0
#endif

namespace kvq {
namespace device {
/// Pair conversions through the GPU's cvt instructions (PTX ISA "cvt"), falling back to
/// the emulator wherever the compilation target lacks them.
namespace hw {

/// Whether this compilation pass converts e4m3/e5m2 through hardware instructions.
KVQ_HD constexpr bool has_fp8_cvt() noexcept { return KVQ_HW_CVT_FP8 != 0; }
/// Whether this compilation pass converts e2m1/e3m2/e2m3/ue8m0 through hardware
/// instructions.
KVQ_HD constexpr bool has_short_cvt() noexcept { return KVQ_HW_CVT_SHORT != 0; }

// ---- f32 -> e4m3 / e5m2 (rn, satfinite) -----------------------------------------

/// Two floats -> two e4m3 codes, lo in bits 0..7, hi in bits 8..15.
KVQ_HD inline std::uint16_t e4m3x2_rn_satfinite(float lo, float hi) {
#if KVQ_HW_CVT_FP8
  unsigned short d;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  return d;
#else
  return static_cast<std::uint16_t>(kvq::encode<fmt::e4m3>(lo) | (kvq::encode<fmt::e4m3>(hi) << 8));
#endif
}

/// Two floats -> two e5m2 codes, lo in bits 0..7, hi in bits 8..15.
KVQ_HD inline std::uint16_t e5m2x2_rn_satfinite(float lo, float hi) {
#if KVQ_HW_CVT_FP8
  unsigned short d;
  asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  return d;
#else
  return static_cast<std::uint16_t>(kvq::encode<fmt::e5m2>(lo) | (kvq::encode<fmt::e5m2>(hi) << 8));
#endif
}

// ---- e4m3 / e5m2 -> f16 (exact) -------------------------------------------------

/// Two e4m3 codes (lo in bits 0..7) -> two binary16 bit patterns (lo in bits 0..15).
/// Every e4m3/e5m2 value is exact in binary16, so this is a decode. Without the
/// hardware instruction it returns 0xFFFFFFFF (use kvq::decode instead).
KVQ_HD inline std::uint32_t e4m3x2_to_f16x2(std::uint16_t codes) {
#if KVQ_HW_CVT_FP8
  unsigned int d;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(d) : "h"(static_cast<unsigned short>(codes)));
  return d;
#else
  (void)codes;  // no software form: the emulator decodes codes directly (kvq::decode)
  return 0xFFFFFFFFu;
#endif
}

/// Two e5m2 codes (lo in bits 0..7) -> two binary16 bit patterns (lo in bits 0..15).
/// Without the hardware instruction it returns 0xFFFFFFFF (use kvq::decode instead).
KVQ_HD inline std::uint32_t e5m2x2_to_f16x2(std::uint16_t codes) {
#if KVQ_HW_CVT_FP8
  unsigned int d;
  asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(d) : "h"(static_cast<unsigned short>(codes)));
  return d;
#else
  (void)codes;
  return 0xFFFFFFFFu;
#endif
}

// ---- f32 -> e2m1 / e3m2 / e2m3 (rn, satfinite; family-specific targets) ----------

/// Two floats -> two e2m1 codes, lo in bits 0..3, hi in bits 4..7 (NVFP4 packing).
KVQ_HD inline std::uint8_t e2m1x2_rn_satfinite(float lo, float hi) {
#if KVQ_HW_CVT_SHORT
  unsigned short d;
  asm("{ .reg .b8 t;\n"
      "  cvt.rn.satfinite.e2m1x2.f32 t, %1, %2;\n"
      "  cvt.u16.u8 %0, t; }"
      : "=h"(d)
      : "f"(hi), "f"(lo));
  return static_cast<std::uint8_t>(d);
#else
  return static_cast<std::uint8_t>(kvq::encode<fmt::e2m1>(lo) | (kvq::encode<fmt::e2m1>(hi) << 4));
#endif
}

/// Two floats -> two e3m2 codes (6 bits each, right-aligned in bytes 0 and 1).
KVQ_HD inline std::uint16_t e3m2x2_rn_satfinite(float lo, float hi) {
#if KVQ_HW_CVT_SHORT
  unsigned short d;
  asm("cvt.rn.satfinite.e3m2x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  return d;
#else
  return static_cast<std::uint16_t>(kvq::encode<fmt::e3m2>(lo) | (kvq::encode<fmt::e3m2>(hi) << 8));
#endif
}

/// Two floats -> two e2m3 codes (6 bits each, right-aligned in bytes 0 and 1).
KVQ_HD inline std::uint16_t e2m3x2_rn_satfinite(float lo, float hi) {
#if KVQ_HW_CVT_SHORT
  unsigned short d;
  asm("cvt.rn.satfinite.e2m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  return d;
#else
  return static_cast<std::uint16_t>(kvq::encode<fmt::e2m3>(lo) | (kvq::encode<fmt::e2m3>(hi) << 8));
#endif
}

/// Two e2m1 codes (lo in bits 0..3) -> two binary16 bit patterns.
KVQ_HD inline std::uint32_t e2m1x2_to_f16x2(std::uint8_t codes) {
#if KVQ_HW_CVT_SHORT
  unsigned int d;
  asm("{ .reg .b8 t;\n"
      "  cvt.u8.u16 t, %1;\n"
      "  cvt.rn.f16x2.e2m1x2 %0, t; }"
      : "=r"(d)
      : "h"(static_cast<unsigned short>(codes)));
  return d;
#else
  (void)codes;
  return 0xFFFFFFFFu;
#endif
}

// ---- f32 -> ue8m0 (rz / rp; family-specific targets) ------------------------------

/// Two floats -> two ue8m0 codes (lo in bits 0..7). R is rounding::toward_zero or
/// rounding::up (the two modes PTX offers: MX "floor" and the round-up recipes),
/// O chooses .satfinite (Inf -> 0xFE) or not (Inf -> 0xFF).
template <rounding R, overflow O>
KVQ_HD inline std::uint16_t ue8m0x2(float lo, float hi) {
  static_assert(R == rounding::toward_zero || R == rounding::up, "ue8m0 conversions are rz or rp");
#if KVQ_HW_CVT_SHORT
  unsigned short d;
  if constexpr (R == rounding::toward_zero && O == overflow::satfinite) {
    asm("cvt.rz.satfinite.ue8m0x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  } else if constexpr (R == rounding::toward_zero) {
    asm("cvt.rz.ue8m0x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  } else if constexpr (O == overflow::satfinite) {
    asm("cvt.rp.satfinite.ue8m0x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  } else {
    asm("cvt.rp.ue8m0x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  }
  return d;
#else
  return static_cast<std::uint16_t>(kvq::encode<fmt::ue8m0>(lo, R, O) | (kvq::encode<fmt::ue8m0>(hi, R, O) << 8));
#endif
}

/// Two ue8m0 codes (lo in bits 0..7) -> two bfloat16 bit patterns (exact except
/// 2^-127, a bf16 subnormal, and 0xFF, a NaN).
KVQ_HD inline std::uint32_t ue8m0x2_to_bf16x2(std::uint16_t codes) {
#if KVQ_HW_CVT_SHORT
  unsigned int d;
  asm("cvt.rn.bf16x2.ue8m0x2 %0, %1;" : "=r"(d) : "h"(static_cast<unsigned short>(codes)));
  return d;
#else
  (void)codes;
  return 0xFFFFFFFFu;
#endif
}

}  // namespace hw
}  // namespace device
}  // namespace kvq
