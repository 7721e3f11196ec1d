// A runtime probe for floating-point contraction (a*b+c fused into one fma).
//
// With a = 1 + 2^-12 the exact product a*a = 1 + 2^-11 + 2^-24 is a tie between two
// floats and rounds (to even) to 1 + 2^-11, so a*a - (1 + 2^-11) is 0 when the
// product is rounded and 2^-24 when it is fused with the subtraction.
// The function is compiled for a target with FMA (x86-64 needs the attribute; AArch64
// always has it) and kept out of line so the compiler sees opaque operands.
#pragma once

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define PROBE_FMA_TARGET __attribute__((target("fma"), noinline))
inline bool cpu_has_fma() { return __builtin_cpu_supports("fma"); }
#elif defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#define PROBE_FMA_TARGET __attribute__((noinline))
inline bool cpu_has_fma() { return true; }
#else
#define PROBE_FMA_TARGET
inline bool cpu_has_fma() { return false; }
#endif

PROBE_FMA_TARGET inline float probe_mul_add(float a, float b, float c) { return a * b + c; }

// Returns 0 if a*b+c was rounded twice, 2^-24 if it was contracted.
inline float contraction_residue() {
  volatile float a = 1.0f + 0x1p-12f;
  volatile float c = -(1.0f + 0x1p-11f);
  return probe_mul_add(a, a, c);
}
