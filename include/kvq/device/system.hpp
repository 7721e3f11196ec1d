/// \file
/// kvq/device/system.hpp — which Thrust device system the device algorithms run on.
///
/// kvq's device algorithms are plain Thrust calls over KVQ_HD functors, so the same
/// source runs on every Thrust device system: CUDA (nvcc), and the CPU backends CPP
/// (serial), OMP (OpenMP) and TBB, which any host compiler builds against the CCCL
/// headers of the CUDA toolkit (include/cccl). The backend is chosen per translation
/// unit with THRUST_DEVICE_SYSTEM; results are bit-identical on all of them because
/// no value that must match comes from a backend-dependent reduction order.
#pragma once

#include <kvq/config.hpp>

#if !defined(__CUDACC__) && !defined(THRUST_DEVICE_SYSTEM)
#error "kvq/device with a host compiler: define THRUST_DEVICE_SYSTEM (THRUST_DEVICE_SYSTEM_CPP, _OMP or _TBB)"
#endif

#include <thrust/execution_policy.h>
#include <thrust/version.h>

namespace kvq {
/// The device layer: Thrust algorithms over the KVQ_HD functors of the lower layers
/// (conversion, block quantization, reductions, attention, metrics) on any Thrust device
/// system, the GPU's conversion instructions with the emulator as fallback, and CUDA
/// kernels. Results are bit-identical across backends and thread counts; the only Thrust
/// reductions are exact integer ones.
namespace device {

/// Name of the Thrust device system this translation unit was compiled for.
inline constexpr const char* system_name() noexcept {
#if THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_CUDA
  return "cuda";
#elif THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_OMP
  return "omp";
#elif THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_TBB
  return "tbb";
#elif THRUST_DEVICE_SYSTEM == THRUST_DEVICE_SYSTEM_CPP
  return "cpp";
#else
  return "unknown";
#endif
}

}  // namespace device
}  // namespace kvq
