// tests/gpu/cost_timing.cu — CUDA-events timings of the constants the prefill cost model
// (kvq/cost/prefill.hpp, docs/cost.md) assumes or fits, so they can be measured on a GPU:
//
//   launch_us        an empty kernel (the launch floor)
//   store GB/s       the KV store: new K/V in BF16 -> cache in BF16, FP8 (E4M3, one tensor
//                    scale) and NVFP4 (E2M1 codes, one E4M3 scale per 16 values), bytes
//                    read + written over the time
//   slots/value      the dequantize-in-tile read: for each query tile of 128 rows and each
//                    query head, the K tiles of the causal prefix are loaded and turned into
//                    BF16 pairs (then summed, so the compiler keeps the work); FP8 and NVFP4
//                    minus the BF16 kernel, in issue slots (SMs x 128 lanes x clock) per
//                    converted value: the model's dequant_ops x dequant_slots
//
// at several prefill lengths L. Head shape: 8 KV heads, 32 query heads, head_dim 128
// (Llama-3.1-8B). Build (no CMake needed):
//   nvcc -O3 -std=c++17 -arch=native tests/gpu/cost_timing.cu -o cost_timing && ./cost_timing
// The conversion intrinsics need CUDA 12.8 or newer (cuda_fp4.h).
#include <cuda_bf16.h>
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cuda_check.hpp"

namespace {

constexpr int kKvHeads = 8, kQHeads = 32, kHeadDim = 128, kQTile = 128;

__global__ void empty_kernel() {}

// One thread per pair of values: BF16 in, cache out.
__global__ void store_bf16(const __nv_bfloat162* in, __nv_bfloat162* out, std::size_t pairs) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < pairs) out[i] = in[i];
}
__global__ void store_fp8(const __nv_bfloat162* in, __nv_fp8x2_storage_t* out, std::size_t pairs, float inv_scale) {
  const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (i < pairs) {
    float2 v = __bfloat1622float2(in[i]);
    v.x *= inv_scale;
    v.y *= inv_scale;
    out[i] = __nv_cvt_float2_to_fp8x2(v, __NV_SATFINITE, __NV_E4M3);
  }
}
// One thread per block of 16 values: amax, E4M3 scale, 8 bytes of E2M1 codes.
__global__ void store_nvfp4(const __nv_bfloat162* in, __nv_fp4x2_storage_t* codes, __nv_fp8_storage_t* scales,
                            std::size_t blocks) {
  const std::size_t b = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
  if (b >= blocks) return;
  float2 v[8];
  float amax = 0.f;
  for (int j = 0; j < 8; ++j) {
    v[j] = __bfloat1622float2(in[b * 8 + j]);
    amax = fmaxf(amax, fmaxf(fabsf(v[j].x), fabsf(v[j].y)));
  }
  const __nv_fp8_storage_t s = __nv_cvt_float_to_fp8(amax / 6.f, __NV_SATFINITE, __NV_E4M3);
  scales[b] = s;
  const float sd = static_cast<float>(__nv_fp8_e4m3(__nv_fp8_e4m3(s)));
  const float inv = sd > 0.f ? 1.f / sd : 0.f;
  for (int j = 0; j < 8; ++j)
    codes[b * 8 + j] = __nv_cvt_float2_to_fp4x2(make_float2(v[j].x * inv, v[j].y * inv), __NV_E2M1, cudaRoundNearest);
}

// The read side. One CTA per (query tile, query head); 128 threads; each thread owns one
// K column pair and walks the causal prefix tile by tile, converting and summing.
template <int Kind>  // 0 = BF16, 1 = FP8, 2 = NVFP4
__global__ void tile_read(const void* cache, const __nv_fp8_storage_t* scales, int L, float* sink) {
  const int qtile = blockIdx.x, qhead = blockIdx.y, kvhead = qhead / (kQHeads / kKvHeads);
  const int prefix = min(L, (qtile + 1) * kQTile);
  __nv_bfloat162 acc = __floats2bfloat162_rn(0.f, 0.f);
  const int pair = threadIdx.x % (kHeadDim / 2), row0 = threadIdx.x / (kHeadDim / 2);
  for (int t = row0; t < prefix; t += blockDim.x / (kHeadDim / 2)) {
    const std::size_t idx = (static_cast<std::size_t>(t) * kKvHeads + kvhead) * (kHeadDim / 2) + pair;
    __nv_bfloat162 x;
    if constexpr (Kind == 0) {
      x = static_cast<const __nv_bfloat162*>(cache)[idx];
    } else if constexpr (Kind == 1) {
      const __half2_raw h = __nv_cvt_fp8x2_to_halfraw2(static_cast<const __nv_fp8x2_storage_t*>(cache)[idx], __NV_E4M3);
      x = __float22bfloat162_rn(__half22float2(__half2(h)));
    } else {
      const __half2_raw h = __nv_cvt_fp4x2_to_halfraw2(static_cast<const __nv_fp4x2_storage_t*>(cache)[idx], __NV_E2M1);
      const __half_raw sr = __nv_cvt_fp8_to_halfraw(scales[idx / 8], __NV_E4M3);
      const float s = __half2float(__half(sr));
      const float2 f = __half22float2(__half2(h));
      x = __floats2bfloat162_rn(f.x * s, f.y * s);
    }
    acc = __hadd2(acc, x);
  }
  const float2 f = __bfloat1622float2(acc);
  if (f.x == 1234.5f) sink[0] = f.y;  // never true for the zero-filled caches; keeps the loop
}

float time_ms(cudaEvent_t a, cudaEvent_t b) {
  float ms = 0.f;
  KVQ_CUDA_CHECK(cudaEventElapsedTime(&ms, a, b));
  return ms;
}

template <class F>
float timed(F&& launch, int reps = 10) {
  cudaEvent_t a, b;
  KVQ_CUDA_CHECK(cudaEventCreate(&a));
  KVQ_CUDA_CHECK(cudaEventCreate(&b));
  launch();  // warm-up
  KVQ_CUDA_CHECK(cudaEventRecord(a));
  for (int i = 0; i < reps; ++i) launch();
  KVQ_CUDA_CHECK(cudaEventRecord(b));
  KVQ_CUDA_CHECK(cudaEventSynchronize(b));
  KVQ_CUDA_CHECK(cudaGetLastError());
  const float ms = time_ms(a, b) / static_cast<float>(reps);
  KVQ_CUDA_CHECK(cudaEventDestroy(a));
  KVQ_CUDA_CHECK(cudaEventDestroy(b));
  return ms;
}

}  // namespace

int main() {
  int dev = 0, count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    std::printf("cost_timing: no CUDA device, skipped\n");
    return 77;
  }
  cudaDeviceProp p{};
  KVQ_CUDA_CHECK(cudaGetDeviceProperties(&p, dev));
  int clock_khz = 0;
  KVQ_CUDA_CHECK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev));
  // Issue slots per second as the model counts them (the datasheet's FP32 flops / 2): FP32
  // lanes per SM x SMs x clock; 64 lanes on sm_80 (A100), 128 on sm_86 and later.
  const double lanes = (p.major == 8 && p.minor == 0) ? 64.0 : 128.0;
  const double slots_per_s = static_cast<double>(p.multiProcessorCount) * lanes * clock_khz * 1e3;
  std::printf("device %s (sm_%d%d), %d SMs, %.0f MHz\n", p.name, p.major, p.minor, p.multiProcessorCount,
              clock_khz / 1e3);
  std::printf("launch_us %.2f (empty kernel, CUDA events, no graph)\n", 1e3 * timed([] { empty_kernel<<<1, 32>>>(); }, 100));

  const std::vector<int> lengths = {1024, 4096, 16384, 65536};
  const int Lmax = lengths.back();
  const std::size_t values = static_cast<std::size_t>(Lmax) * kKvHeads * kHeadDim;  // one of K or V
  __nv_bfloat162 *in = nullptr, *out16 = nullptr;
  __nv_fp8x2_storage_t* out8 = nullptr;
  __nv_fp4x2_storage_t* out4 = nullptr;
  __nv_fp8_storage_t* sc4 = nullptr;
  float* sink = nullptr;
  KVQ_CUDA_CHECK(cudaMalloc(&in, values * 2));
  KVQ_CUDA_CHECK(cudaMalloc(&out16, values * 2));
  KVQ_CUDA_CHECK(cudaMalloc(&out8, values));
  KVQ_CUDA_CHECK(cudaMalloc(&out4, values / 2));
  KVQ_CUDA_CHECK(cudaMalloc(&sc4, values / 16));
  KVQ_CUDA_CHECK(cudaMalloc(&sink, sizeof(float)));
  KVQ_CUDA_CHECK(cudaMemset(in, 0, values * 2));
  KVQ_CUDA_CHECK(cudaMemset(out16, 0, values * 2));
  KVQ_CUDA_CHECK(cudaMemset(out8, 0, values));
  KVQ_CUDA_CHECK(cudaMemset(out4, 0, values / 2));
  KVQ_CUDA_CHECK(cudaMemset(sc4, 0, values / 16));

  std::printf("\n%8s %12s %12s %12s %12s %12s %12s\n", "L", "store_bf16", "store_fp8", "store_nvfp4", "GB/s_bf16",
              "GB/s_fp8", "GB/s_nvfp4");
  for (int L : lengths) {
    const std::size_t n = static_cast<std::size_t>(L) * kKvHeads * kHeadDim, pairs = n / 2, blocks = n / 16;
    const unsigned g2 = static_cast<unsigned>((pairs + 255) / 256), g16 = static_cast<unsigned>((blocks + 255) / 256);
    const float t16 = timed([&] { store_bf16<<<g2, 256>>>(in, out16, pairs); });
    const float t8 = timed([&] { store_fp8<<<g2, 256>>>(in, out8, pairs, 1.f); });
    const float t4 = timed([&] { store_nvfp4<<<g16, 256>>>(in, out4, sc4, blocks); });
    std::printf("%8d %12.4f %12.4f %12.4f %12.1f %12.1f %12.1f\n", L, t16, t8, t4, n * 4.0 / (t16 * 1e6),
                n * 3.0 / (t8 * 1e6), (n * 2.5 + n / 2.0 + n / 16.0) / (t4 * 1e6));
  }

  std::printf("\n%8s %12s %12s %12s %14s %14s\n", "L", "read_bf16", "read_fp8", "read_nvfp4", "slots/val_fp8",
              "slots/val_nvfp4");
  for (int L : lengths) {
    const dim3 grid((L + kQTile - 1) / kQTile, kQHeads);
    // Values converted: per (query tile, head) the causal prefix of K, head_dim values each.
    double converted = 0;
    for (int q = 0; q < static_cast<int>(grid.x); ++q)
      converted += static_cast<double>(std::min(L, (q + 1) * kQTile)) * kHeadDim * kQHeads;
    const float r16 = timed([&] { tile_read<0><<<grid, 128>>>(out16, nullptr, L, sink); });
    const float r8 = timed([&] { tile_read<1><<<grid, 128>>>(out8, nullptr, L, sink); });
    const float r4 = timed([&] { tile_read<2><<<grid, 128>>>(out4, sc4, L, sink); });
    std::printf("%8d %12.4f %12.4f %12.4f %14.3f %14.3f\n", L, r16, r8, r4,
                (r8 - r16) * 1e-3 * slots_per_s / converted, (r4 - r16) * 1e-3 * slots_per_s / converted);
  }
  std::printf("\nThe model (docs/cost.md) assumes launch_us 3 and fits dequant_ops x dequant_slots = 14.5 issue slots\n"
              "per FP8 value on FlashInfer FA2 (sm_120); compare slots/val_fp8 with it.\n");
  cudaFree(in);
  cudaFree(out16);
  cudaFree(out8);
  cudaFree(out4);
  cudaFree(sc4);
  cudaFree(sink);
  return 0;
}
