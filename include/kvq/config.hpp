/// \file
/// kvq/config.hpp — portability macros shared by every layer.
///
/// KVQ_HD marks functions that run on both sides (host and CUDA device). Everything
/// below device/ is KVQ_HD code: no exceptions, no allocation, no std:: calls that
/// device code lacks. Host-only API functions (the checked entry points) are plain
/// host functions without KVQ_HD and may throw std::invalid_argument.
#pragma once

/// Major version of the kvq headers.
#define KVQ_VERSION_MAJOR 0
/// Minor version of the kvq headers.
#define KVQ_VERSION_MINOR 1
/// Patch version of the kvq headers.
#define KVQ_VERSION_PATCH 0
/// The version as a string, "major.minor.patch".
#define KVQ_VERSION_STRING "0.1.0"

#if defined(__CUDACC__) || defined(__HIPCC__)
#define KVQ_HD __host__ __device__
#define KVQ_DEVICE_COMPILER 1
#else
/// Marks a function that runs on host and device: `__host__ __device__` under nvcc or
/// hipcc, empty for a host compiler. KVQ_HD code throws nothing and allocates nothing.
#define KVQ_HD
/// 1 when the translation unit is compiled by nvcc or hipcc (host and device pass), else 0.
#define KVQ_DEVICE_COMPILER 0
#endif

// True while compiling the device half of a CUDA translation unit.
#if defined(__CUDA_ARCH__)
#define KVQ_DEVICE_PASS 1
#else
/// 1 while compiling the device half of a CUDA translation unit (`__CUDA_ARCH__` defined),
/// 0 in the host half and with a host compiler.
#define KVQ_DEVICE_PASS 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#define KVQ_FORCEINLINE inline __attribute__((always_inline))
#else
/// `inline` plus `__attribute__((always_inline))` where the compiler has it (GCC, Clang).
#define KVQ_FORCEINLINE inline
#endif

// Contraction of a*b+c into an fma changes bits. kvq is compiled without it
// (-ffp-contract=off / --fmad=false are usage requirements of kvq::kvq); this
// pragma additionally protects translation units built outside CMake.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__) && !defined(__CUDACC__)
// GCC honours -ffp-contract only as a flag; the CMake target sets it.
#endif

#if defined(__FAST_MATH__)
#error "kvq must not be compiled with -ffast-math: it changes floating-point results"
#endif

namespace kvq {
/// Version triple of the kvq headers.
struct version_info {
  /// \var minor
  /// Minor version (KVQ_VERSION_MINOR).

  /// \var patch
  /// Patch version (KVQ_VERSION_PATCH).

  /// Major version (KVQ_VERSION_MAJOR).
  int major, minor, patch;
};
/// The version of these headers, {KVQ_VERSION_MAJOR, KVQ_VERSION_MINOR, KVQ_VERSION_PATCH}.
inline constexpr version_info version{KVQ_VERSION_MAJOR, KVQ_VERSION_MINOR, KVQ_VERSION_PATCH};
}  // namespace kvq
