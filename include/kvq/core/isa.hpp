/// \file
/// kvq/core/isa.hpp — which instruction-set copy of the host bulk kernels runs.
///
/// The kernels whose speed depends most on the instruction set (the F16C encoder of
/// kvq/format/bulk.hpp, the block quantize/dequantize and tensor amax of
/// kvq/block/bulk.hpp, the batched fast MMA of kvq/mma/batch.hpp, the batched score dot
/// products of kvq/core/reduce.hpp and kvq/core/dot_block.hpp, the normal draws of
/// kvq/inject/normal_array.hpp, sincos_n of kvq/core/math_array.hpp) are compiled twice in every x86-64 host translation unit
/// built by GCC or Clang: once for the translation unit's own target and once for
/// x86-64-v3 (a function `target` attribute: AVX2, F16C, BMI1/2, LZCNT, POPCNT, MOVBE).
/// The copy runs when the CPU has those extensions (and FMA), so a portable build (no
/// -march flag, a wheel) runs them at the speed of a -march=native one.
///
/// The x86-64-v3 copy leaves out FMA on purpose: without the instruction no compiler can
/// contract a*b + c, whatever -ffp-contract the including translation unit uses, so both
/// copies perform the same IEEE operations in the same order and give the same bits
/// (tests/core/test_isa.cpp and the kernels' tests run every kernel under both and compare
/// hashes). The exceptions are the normal draws and sincos_n (KVQ_TARGET_X86_64_V3_FMA):
/// kvq's log, sine and cosine write std::fma, which without the instruction is a library
/// call per lane; those copies have FMA and rely, like any -march=native build of kvq, on contraction
/// being off (-ffp-contract=off, a usage requirement of the kvq::kvq target).
///
/// Where the translation unit already targets those extensions (-march=x86-64-v3,
/// -march=native on a recent CPU) there is one compilation: isa::baseline then selects
/// the portable algorithms of the encoders and block stores (the integer encoder instead
/// of the F16C kernel), so that forcing each still compares two computations, and the
/// other kernels run the same code either way.
///
/// The choice is process-wide: the best the CPU has, unless set_isa chose another (for
/// tests, and for the kvq command's and Python's KVQ_ISA=baseline|x86-64-v3). nvcc
/// translation units, other compilers and other architectures have the portable
/// kernels only (isa_dispatch is false there).
#pragma once

#include <atomic>
#include <stdexcept>
#include <string>
#include <string_view>

#include <kvq/config.hpp>

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__)) && !defined(__CUDACC__) && \
    !defined(KVQ_NO_ISA_DISPATCH)
/// 1 where the x86-64-v3 copies exist (x86-64 host code by GCC or Clang).
#define KVQ_ISA_DISPATCH 1
#if defined(__AVX2__) && defined(__F16C__) && defined(__BMI2__)
/// The attribute of the x86-64-v3 copies: empty where the translation unit already
/// targets those extensions, else a GCC/Clang `target` attribute (FMA left out, above).
#define KVQ_TARGET_X86_64_V3
#else
#define KVQ_TARGET_X86_64_V3 __attribute__((target("avx2,f16c,bmi,bmi2,lzcnt,popcnt,movbe")))
#endif
#if defined(__AVX2__) && defined(__F16C__) && defined(__BMI2__) && defined(__FMA__)
/// KVQ_TARGET_X86_64_V3 with FMA, for kernels whose source writes fma (see above).
#define KVQ_TARGET_X86_64_V3_FMA
#else
#define KVQ_TARGET_X86_64_V3_FMA __attribute__((target("avx2,f16c,bmi,bmi2,lzcnt,popcnt,movbe,fma")))
#endif
#include <cpuid.h>
#endif

namespace kvq {

/// The instruction sets the host bulk kernels are compiled for.
enum class isa : int {
  baseline,   ///< the translation unit's own target, portable algorithms
  x86_64_v3,  ///< AVX2, F16C, BMI1/2, LZCNT, POPCNT, MOVBE (not FMA), the F16C kernels
};

/// Whether this translation unit has the x86-64-v3 copies (KVQ_ISA_DISPATCH).
inline constexpr bool isa_dispatch =
#if defined(KVQ_ISA_DISPATCH)
    true;
#else
    false;
#endif

/// "baseline" or "x86-64-v3": the names of KVQ_ISA, the kvq command and Python.
constexpr const char* isa_name(isa i) noexcept { return i == isa::x86_64_v3 ? "x86-64-v3" : "baseline"; }

/// The isa named s ("baseline" or "x86-64-v3").
/// \throws std::invalid_argument for any other text.
inline isa parse_isa(std::string_view s) {
  if (s == "baseline") return isa::baseline;
  if (s == "x86-64-v3") return isa::x86_64_v3;
  throw std::invalid_argument("unknown instruction set '" + std::string(s) + "': expected 'baseline' or 'x86-64-v3'");
}

/// Whether this process can run the kernels of i here: baseline always; x86-64-v3 where
/// the copies exist, the CPU has every extension they use (FMA included) and the operating system
/// saves the AVX registers (CPUID and XGETBV, Intel SDM vol. 2A "CPUID" and 13.3).
inline bool cpu_supports(isa i) noexcept {
  if (i == isa::baseline) return true;
#if defined(KVQ_ISA_DISPATCH)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool f16c = (c >> 29) & 1u, movbe = (c >> 22) & 1u, popcnt = (c >> 23) & 1u, osxsave = (c >> 27) & 1u,
             avx = (c >> 28) & 1u, fma = (c >> 12) & 1u;
  if (!(f16c && movbe && popcnt && osxsave && avx && fma)) return false;
  unsigned xcr0_lo = 0, xcr0_hi = 0;
  __asm__("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0u));
  if ((xcr0_lo & 6u) != 6u) return false;  // XMM and YMM state
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const bool bmi1 = (b >> 3) & 1u, avx2 = (b >> 5) & 1u, bmi2 = (b >> 8) & 1u;
  if (!(bmi1 && avx2 && bmi2)) return false;
  if (!__get_cpuid(0x80000001u, &a, &b, &c, &d)) return false;
  return (c >> 5) & 1u;  // LZCNT
#else
  return false;
#endif
}

namespace detail {
/// The chosen isa + 1; 0 until the first question (then the best the CPU has).
inline std::atomic<int> isa_choice{0};
}  // namespace detail

/// The isa whose kernels run now.
inline isa active_isa() noexcept {
  int c = detail::isa_choice.load(std::memory_order_relaxed);
  if (c == 0) {
    c = (cpu_supports(isa::x86_64_v3) ? static_cast<int>(isa::x86_64_v3) : static_cast<int>(isa::baseline)) + 1;
    int expected = 0;  // a set_isa that came first wins
    if (!detail::isa_choice.compare_exchange_strong(expected, c, std::memory_order_relaxed)) c = expected;
  }
  return static_cast<isa>(c - 1);
}

/// Makes the kernels of i run from now on, in every thread (results do not change,
/// only speed: a call already running finishes with the copy it started with).
/// \throws std::invalid_argument when this CPU or build cannot run i (cpu_supports).
inline void set_isa(isa i) {
  if (!cpu_supports(i))
    throw std::invalid_argument(std::string("instruction set ") + isa_name(i) +
                                " is not available here (needs an x86-64 CPU with AVX2, FMA, F16C, BMI1/2, "
                                "LZCNT, POPCNT and MOVBE, and a GCC or Clang build)");
  detail::isa_choice.store(static_cast<int>(i) + 1, std::memory_order_relaxed);
}

namespace detail {
/// Whether the x86-64-v3 copies run now (always false without them).
inline bool use_x86_64_v3() noexcept {
#if defined(KVQ_ISA_DISPATCH)
  return active_isa() == isa::x86_64_v3;
#else
  return false;
#endif
}
}  // namespace detail

}  // namespace kvq
