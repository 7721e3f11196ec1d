/// \file
/// kvq/device/nvfp4_kernel.cuh — a warp-level NVFP4 quantize kernel (TransformerEngine
/// recipe) producing the same codes and scales as kvq::block::nvfp4_te.
///
/// Layout (kvq/block/api.hpp): n elements (a multiple of 16) in 16-element blocks;
/// codes n/2 bytes, element 2i in the low nibble; one e4m3 scale byte per block.
/// Work split: lane l of a warp loads elements [8l, 8l + 8) of the warp's 256-element
/// group (two float4 loads), computes its partial amax, and takes the block amax from
/// its partner lane (l ^ 1) with one shuffle; then each lane encodes its 8 elements
/// into one 32-bit word and the even lane stores the scale. Maximum is order-independent,
/// so the shuffle gives exactly the emulator's block amax. The tensor amax (S_enc) is an
/// input: compute it with kvq::device::tensor_amax (an exact integer max reduction).
///
/// nvcc only. The element conversions use cvt.rn.satfinite.e2m1x2.f32 on family-specific
/// targets (sm_100a, sm_120a, ...) and the emulator elsewhere; the scale conversion uses
/// cvt.rn.satfinite.e4m3x2.f32 from sm_89 (kvq/device/cvt.hpp).
#pragma once

#if !defined(__CUDACC__)
#error "kvq/device/nvfp4_kernel.cuh is CUDA code: compile it with nvcc"
#endif

#include <cstddef>
#include <cstdint>

#include <cuda_runtime.h>

#include <kvq/block/nvfp4.hpp>
#include <kvq/device/nvfp4_lanes.hpp>

namespace kvq {
namespace device {

/// One warp per group of 16 blocks, grid-stride over groups. Vec: x is 16-byte aligned
/// (float4 loads); otherwise scalar loads.
template <bool Vec>
__global__ void nvfp4_te_quantize_kernel(const float* __restrict__ x, std::size_t nblocks, kvq::block::nvfp4_te scheme,
                                         kvq::block::nvfp4_te::params p, std::uint8_t* __restrict__ codes,
                                         std::uint8_t* __restrict__ scales) {
  const unsigned lane = threadIdx.x & 31u;
  const std::size_t warp = (static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const std::size_t nwarps = (static_cast<std::size_t>(gridDim.x) * blockDim.x) >> 5;
  const std::size_t ngroups = (nblocks + 15) / 16;
  for (std::size_t g = warp; g < ngroups; g += nwarps) {
    const std::size_t blk = g * 16 + (lane >> 1);
    const bool active = blk < nblocks;  // uniform per lane pair
    float v[8];
    if (active) {
      const std::size_t e0 = blk * 16 + (lane & 1u) * 8;
      if (Vec) {
        const float4 a = reinterpret_cast<const float4*>(x + e0)[0];
        const float4 b = reinterpret_cast<const float4*>(x + e0)[1];
        v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
        v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
      } else {
        for (int i = 0; i < 8; ++i) v[i] = x[e0 + i];
      }
    } else {
      for (int i = 0; i < 8; ++i) v[i] = 0.0f;
    }
    const float mine = nvfp4_lane::partial_amax(v);
    const float other = __shfl_xor_sync(0xFFFFFFFFu, mine, 1);
    const float bamax = nvfp4_lane::combine_amax(mine, other);
    if (active) {
      const std::uint8_t sf = nvfp4_lane::scale_code(bamax, p);
      const float inv = nvfp4_lane::inverse(sf, scheme, p);
      const std::uint32_t w = nvfp4_lane::encode8(v, inv);
      reinterpret_cast<std::uint32_t*>(codes)[blk * 2 + (lane & 1u)] = w;
      if ((lane & 1u) == 0) scales[blk] = sf;
    }
  }
}

/// Launches the kernel for n elements (n % 16 == 0, checked by the caller) with the
/// recipe's parameters for `tensor_amax`. Device pointers; codes n/2 bytes (4-byte
/// aligned), scales n/16 bytes.
inline cudaError_t launch_nvfp4_te_quantize(const float* x, std::size_t n, float tensor_amax,
                                            const kvq::block::nvfp4_te& scheme, std::uint8_t* codes,
                                            std::uint8_t* scales, cudaStream_t stream = 0) {
  const std::size_t nblocks = n / 16;
  if (nblocks == 0) return cudaSuccess;
  const kvq::block::nvfp4_te::params p = kvq::block::nvfp4_te::prepare(tensor_amax);
  const int threads = 256;
  const std::size_t groups = (nblocks + 15) / 16;
  const std::size_t want = (groups + (threads / 32) - 1) / (threads / 32);
  const unsigned grid = static_cast<unsigned>(want < 65535u * 16u ? want : 65535u * 16u);
  const bool aligned = (reinterpret_cast<std::uintptr_t>(x) % 16u) == 0;
  if (aligned)
    nvfp4_te_quantize_kernel<true><<<grid, threads, 0, stream>>>(x, nblocks, scheme, p, codes, scales);
  else
    nvfp4_te_quantize_kernel<false><<<grid, threads, 0, stream>>>(x, nblocks, scheme, p, codes, scales);
  return cudaGetLastError();
}

}  // namespace device
}  // namespace kvq
