/// \file
/// kvq/config.hpp — portability macros shared by every layer.
///
/// KVQ_HD marks functions that run on both sides (host and CUDA device). Everything
/// below device/ is KVQ_HD code: no exceptions, no allocation, no std:: calls that
/// device code lacks. Host-only API layers (checked entry points) are marked
/// KVQ_HOST and may throw std::invalid_argument.
#pragma once

#define KVQ_VERSION_MAJOR 0
#define KVQ_VERSION_MINOR 1
#define KVQ_VERSION_PATCH 0
#define KVQ_VERSION_STRING "0.1.0"

#if defined(__CUDACC__) || defined(__HIPCC__)
#define KVQ_HD __host__ __device__
#define KVQ_DEVICE_COMPILER 1
#else
#define KVQ_HD
#define KVQ_DEVICE_COMPILER 0
#endif

// True while compiling the device half of a CUDA translation unit.
#if defined(__CUDA_ARCH__)
#define KVQ_DEVICE_PASS 1
#else
#define KVQ_DEVICE_PASS 0
#endif

#if defined(__GNUC__) || defined(__clang__)
#define KVQ_FORCEINLINE inline __attribute__((always_inline))
#else
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
struct version_info {
  int major, minor, patch;
};
inline constexpr version_info version{KVQ_VERSION_MAJOR, KVQ_VERSION_MINOR, KVQ_VERSION_PATCH};
}  // namespace kvq
