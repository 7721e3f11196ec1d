// tests/gpu/sweep.cu — every float input (all 2^32 bit patterns) through the GPU's
// conversions, compared with the emulator.
//
// For each sweep the GPU evaluates, for every input, a *subject* (a hardware cvt
// instruction through kvq/device/cvt.hpp, or one of CUDA's own device conversion
// functions from cuda_fp8.h / cuda_fp6.h / cuda_fp4.h) and the emulator (kvq::encode
// compiled for the device), counts the inputs where they differ (NaN inputs counted
// separately), records the first few, and accumulates per-chunk content hashes of both
// (256 chunks of 2^24 inputs; order-independent sums, kvq/device/hash.hpp). The host
// then recomputes the emulator's chunk hashes with the host compiler, so
//   subject == device emulator   element by element, on the GPU, and
//   device emulator == host emulator   by hash, chunk by chunk,
// which together say "the GPU equals the CPU emulator" for every input.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include <cuda_fp4.h>
#include <cuda_fp6.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <kvq/device/cvt.hpp>
#include <kvq/device/hash.hpp>
#include <kvq/device/math.hpp>
#include <kvq/format.hpp>

#include "cuda_check.hpp"
#include "gpu_common.hpp"

namespace kvq_gpu {
namespace {

using kvq::overflow;
using kvq::rounding;
namespace fmt = kvq::fmt;
namespace hw = kvq::device::hw;

constexpr int kChunkBits = 24;
constexpr int kChunks = 1 << (32 - kChunkBits);
constexpr int kRecords = 8;

struct record {
  std::uint32_t input;
  std::uint8_t subject, emulator;
};

struct sweep_out {
  unsigned long long mismatches;
  unsigned long long nan_input_mismatches;
  unsigned int nrec;
  record rec[kRecords];
  unsigned long long chunk_subject[kChunks];
  unsigned long long chunk_emulator[kChunks];
};

// ---- emulator configurations (host and device) -------------------------------------

enum class emu : int {
  e4m3_sat, e4m3_nosat, e5m2_sat, e5m2_nosat, e2m1_rn, e2m1_rz, e3m2_rn, e3m2_rz, e2m3_rn, e2m3_rz,
  ue8m0_rz_sat, ue8m0_rz_nosat, ue8m0_rp_sat, ue8m0_rp_nosat, count
};

template <emu E>
__host__ __device__ inline std::uint8_t emulate_fixed(float x) {
  switch (E) {
    case emu::e4m3_sat: return kvq::encode<fmt::e4m3>(x);
    case emu::e4m3_nosat: return kvq::encode<fmt::e4m3>(x, rounding::nearest_even, overflow::nosat);
    case emu::e5m2_sat: return kvq::encode<fmt::e5m2>(x);
    case emu::e5m2_nosat: return kvq::encode<fmt::e5m2>(x, rounding::nearest_even, overflow::nosat);
    case emu::e2m1_rn: return kvq::encode<fmt::e2m1>(x);
    case emu::e2m1_rz: return kvq::encode<fmt::e2m1>(x, rounding::toward_zero);
    case emu::e3m2_rn: return kvq::encode<fmt::e3m2>(x);
    case emu::e3m2_rz: return kvq::encode<fmt::e3m2>(x, rounding::toward_zero);
    case emu::e2m3_rn: return kvq::encode<fmt::e2m3>(x);
    case emu::e2m3_rz: return kvq::encode<fmt::e2m3>(x, rounding::toward_zero);
    case emu::ue8m0_rz_sat: return kvq::encode<fmt::ue8m0>(x, rounding::toward_zero, overflow::satfinite);
    case emu::ue8m0_rz_nosat: return kvq::encode<fmt::ue8m0>(x, rounding::toward_zero, overflow::nosat);
    case emu::ue8m0_rp_sat: return kvq::encode<fmt::ue8m0>(x, rounding::up, overflow::satfinite);
    case emu::ue8m0_rp_nosat: return kvq::encode<fmt::ue8m0>(x, rounding::up, overflow::nosat);
    default: return 0;
  }
}

// ---- subjects: two inputs -> two codes (lo byte = first input) ---------------------

enum class subj : int {
  hw_e4m3, cuda_e4m3_sat, cuda_e4m3_nosat, hw_e5m2, cuda_e5m2_sat, cuda_e5m2_nosat,
  hw_e2m1, cuda_e2m1_rn, cuda_e2m1_rz, hw_e3m2, cuda_e3m2_rn, cuda_e3m2_rz, hw_e2m3, cuda_e2m3_rn, cuda_e2m3_rz,
  hw_ue8m0_rz_sat, hw_ue8m0_rz_nosat, hw_ue8m0_rp_sat, hw_ue8m0_rp_nosat,
  cuda_ue8m0_rz_sat, cuda_ue8m0_rz_nosat, cuda_ue8m0_rp_sat, cuda_ue8m0_rp_nosat
};

__device__ inline std::uint16_t two(std::uint8_t a, std::uint8_t b) {
  return static_cast<std::uint16_t>(a | (b << 8));
}

template <subj S>
__device__ inline std::uint16_t subject(float a, float b) {
  if constexpr (S == subj::hw_e4m3) return hw::e4m3x2_rn_satfinite(a, b);
  else if constexpr (S == subj::cuda_e4m3_sat)
    return two(__nv_cvt_float_to_fp8(a, __NV_SATFINITE, __NV_E4M3), __nv_cvt_float_to_fp8(b, __NV_SATFINITE, __NV_E4M3));
  else if constexpr (S == subj::cuda_e4m3_nosat)
    return two(__nv_cvt_float_to_fp8(a, __NV_NOSAT, __NV_E4M3), __nv_cvt_float_to_fp8(b, __NV_NOSAT, __NV_E4M3));
  else if constexpr (S == subj::hw_e5m2) return hw::e5m2x2_rn_satfinite(a, b);
  else if constexpr (S == subj::cuda_e5m2_sat)
    return two(__nv_cvt_float_to_fp8(a, __NV_SATFINITE, __NV_E5M2), __nv_cvt_float_to_fp8(b, __NV_SATFINITE, __NV_E5M2));
  else if constexpr (S == subj::cuda_e5m2_nosat)
    return two(__nv_cvt_float_to_fp8(a, __NV_NOSAT, __NV_E5M2), __nv_cvt_float_to_fp8(b, __NV_NOSAT, __NV_E5M2));
  else if constexpr (S == subj::hw_e2m1) {
    const std::uint8_t p = hw::e2m1x2_rn_satfinite(a, b);
    return two(static_cast<std::uint8_t>(p & 0x0Fu), static_cast<std::uint8_t>(p >> 4));
  } else if constexpr (S == subj::cuda_e2m1_rn)
    return two(__nv_cvt_float_to_fp4(a, __NV_E2M1, cudaRoundNearest), __nv_cvt_float_to_fp4(b, __NV_E2M1, cudaRoundNearest));
  else if constexpr (S == subj::cuda_e2m1_rz)
    return two(__nv_cvt_float_to_fp4(a, __NV_E2M1, cudaRoundZero), __nv_cvt_float_to_fp4(b, __NV_E2M1, cudaRoundZero));
  else if constexpr (S == subj::hw_e3m2) return hw::e3m2x2_rn_satfinite(a, b);
  else if constexpr (S == subj::cuda_e3m2_rn)
    return two(__nv_cvt_float_to_fp6(a, __NV_E3M2, cudaRoundNearest), __nv_cvt_float_to_fp6(b, __NV_E3M2, cudaRoundNearest));
  else if constexpr (S == subj::cuda_e3m2_rz)
    return two(__nv_cvt_float_to_fp6(a, __NV_E3M2, cudaRoundZero), __nv_cvt_float_to_fp6(b, __NV_E3M2, cudaRoundZero));
  else if constexpr (S == subj::hw_e2m3) return hw::e2m3x2_rn_satfinite(a, b);
  else if constexpr (S == subj::cuda_e2m3_rn)
    return two(__nv_cvt_float_to_fp6(a, __NV_E2M3, cudaRoundNearest), __nv_cvt_float_to_fp6(b, __NV_E2M3, cudaRoundNearest));
  else if constexpr (S == subj::cuda_e2m3_rz)
    return two(__nv_cvt_float_to_fp6(a, __NV_E2M3, cudaRoundZero), __nv_cvt_float_to_fp6(b, __NV_E2M3, cudaRoundZero));
  else if constexpr (S == subj::hw_ue8m0_rz_sat) return hw::ue8m0x2<rounding::toward_zero, overflow::satfinite>(a, b);
  else if constexpr (S == subj::hw_ue8m0_rz_nosat) return hw::ue8m0x2<rounding::toward_zero, overflow::nosat>(a, b);
  else if constexpr (S == subj::hw_ue8m0_rp_sat) return hw::ue8m0x2<rounding::up, overflow::satfinite>(a, b);
  else if constexpr (S == subj::hw_ue8m0_rp_nosat) return hw::ue8m0x2<rounding::up, overflow::nosat>(a, b);
  else if constexpr (S == subj::cuda_ue8m0_rz_sat)
    return two(__nv_cvt_float_to_e8m0(a, __NV_SATFINITE, cudaRoundZero), __nv_cvt_float_to_e8m0(b, __NV_SATFINITE, cudaRoundZero));
  else if constexpr (S == subj::cuda_ue8m0_rz_nosat)
    return two(__nv_cvt_float_to_e8m0(a, __NV_NOSAT, cudaRoundZero), __nv_cvt_float_to_e8m0(b, __NV_NOSAT, cudaRoundZero));
  else if constexpr (S == subj::cuda_ue8m0_rp_sat)
    return two(__nv_cvt_float_to_e8m0(a, __NV_SATFINITE, cudaRoundPosInf), __nv_cvt_float_to_e8m0(b, __NV_SATFINITE, cudaRoundPosInf));
  else
    return two(__nv_cvt_float_to_e8m0(a, __NV_NOSAT, cudaRoundPosInf), __nv_cvt_float_to_e8m0(b, __NV_NOSAT, cudaRoundPosInf));
}

__device__ inline unsigned long long warp_sum(unsigned long long v) {
  for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xFFFFFFFFu, v, off);
  return v;
}

/// grid (2^23 / 256, 256): blockIdx.y = chunk, one thread per input pair.
template <subj S, emu E>
__global__ void sweep_kernel(sweep_out* out) {
  const std::uint32_t chunk = blockIdx.y;
  const std::uint32_t pair = blockIdx.x * blockDim.x + threadIdx.x;
  const std::uint32_t i0 = (chunk << kChunkBits) | (pair << 1);
  const float x[2] = {kvq::bit_cast<float>(i0), kvq::bit_cast<float>(i0 + 1u)};
  const std::uint16_t s = subject<S>(x[0], x[1]);
  const std::uint8_t sc[2] = {static_cast<std::uint8_t>(s & 0xFFu), static_cast<std::uint8_t>(s >> 8)};
  const std::uint8_t ec[2] = {emulate_fixed<E>(x[0]), emulate_fixed<E>(x[1])};
  unsigned long long hs = 0, he = 0;
  for (int k = 0; k < 2; ++k) {
    const std::uint32_t in = i0 + static_cast<std::uint32_t>(k);
    hs += kvq::device::hash_term(in, sc[k]);
    he += kvq::device::hash_term(in, ec[k]);
    if (sc[k] != ec[k]) {
      atomicAdd(&out->mismatches, 1ull);
      if ((in & 0x7FFFFFFFu) > 0x7F800000u) atomicAdd(&out->nan_input_mismatches, 1ull);
      const unsigned slot = atomicAdd(&out->nrec, 1u);
      if (slot < kRecords) out->rec[slot] = {in, sc[k], ec[k]};
    }
  }
  hs = warp_sum(hs);
  he = warp_sum(he);
  if ((threadIdx.x & 31u) == 0) {
    atomicAdd(&out->chunk_subject[chunk], hs);
    atomicAdd(&out->chunk_emulator[chunk], he);
  }
}

__global__ void caps_kernel(int* flags) {
  flags[0] = hw::has_fp8_cvt() ? 1 : 0;
  flags[1] = hw::has_short_cvt() ? 1 : 0;
}

// ---- host re-hash of the emulator --------------------------------------------------

struct host_hashes {
  bool done = false;
  std::vector<unsigned long long> chunk;  // per chunk
  std::vector<char> have;
};

/// Chunk order that spreads a partial run over the whole input space (bit reversal).
std::vector<int> chunk_order() {
  std::vector<int> o(kChunks);
  for (int c = 0; c < kChunks; ++c) {
    int r = 0;
    for (int b = 0; b < 32 - kChunkBits; ++b) r |= ((c >> b) & 1) << (32 - kChunkBits - 1 - b);
    o[static_cast<std::size_t>(c)] = r;
  }
  return o;
}

template <emu E>
unsigned long long host_chunk_sum(std::uint32_t base) {
  unsigned long long sum = 0;
  for (std::uint32_t j = 0; j < (1u << kChunkBits); ++j) {
    const std::uint32_t in = base | j;
    sum += kvq::device::hash_term(in, emulate_fixed<E>(kvq::bit_cast<float>(in)));
  }
  return sum;
}

unsigned long long host_chunk(emu e, std::uint32_t base) {
  switch (e) {
#define KVQ_E(X) case emu::X: return host_chunk_sum<emu::X>(base);
    KVQ_E(e4m3_sat) KVQ_E(e4m3_nosat) KVQ_E(e5m2_sat) KVQ_E(e5m2_nosat) KVQ_E(e2m1_rn) KVQ_E(e2m1_rz)
    KVQ_E(e3m2_rn) KVQ_E(e3m2_rz) KVQ_E(e2m3_rn) KVQ_E(e2m3_rz) KVQ_E(ue8m0_rz_sat) KVQ_E(ue8m0_rz_nosat)
    KVQ_E(ue8m0_rp_sat) KVQ_E(ue8m0_rp_nosat)
#undef KVQ_E
    default: return 0;
  }
}

void host_hash(emu e, host_hashes& h, double budget_s) {
  h.chunk.assign(kChunks, 0);
  h.have.assign(kChunks, 0);
  const auto order = chunk_order();
  const auto t0 = std::chrono::steady_clock::now();
  volatile bool stop = false;
#pragma omp parallel for schedule(dynamic, 1)
  for (int k = 0; k < kChunks; ++k) {
    if (stop) continue;
    const int c = order[static_cast<std::size_t>(k)];
    h.chunk[static_cast<std::size_t>(c)] = host_chunk(e, static_cast<std::uint32_t>(c) << kChunkBits);
    h.have[static_cast<std::size_t>(c)] = 1;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > budget_s) stop = true;
  }
  h.done = true;
}

template <subj S, emu E>
void launch(sweep_out* d_out) {
  const dim3 grid((1u << (kChunkBits - 1)) / 256u, kChunks);
  sweep_kernel<S, E><<<grid, 256>>>(d_out);
}

struct sweep_spec {
  void (*run)(sweep_out*);
  emu e;
  const char* name;
  int needs;  // 0: always meaningful, 1: hardware fp8 path, 2: family-specific short path
};

}  // namespace

device_caps query_caps() {
  device_caps c;
  int dev = 0;
  KVQ_CUDA_CHECK(cudaGetDevice(&dev));
  cudaDeviceProp prop{};
  KVQ_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  c.cc_major = prop.major;
  c.cc_minor = prop.minor;
  c.name = prop.name;
  int* d_flags = nullptr;
  KVQ_CUDA_CHECK(cudaMalloc(&d_flags, 2 * sizeof(int)));
  caps_kernel<<<1, 1>>>(d_flags);
  KVQ_CUDA_CHECK(cudaGetLastError());
  int flags[2] = {0, 0};
  KVQ_CUDA_CHECK(cudaMemcpy(flags, d_flags, sizeof flags, cudaMemcpyDeviceToHost));
  KVQ_CUDA_CHECK(cudaFree(d_flags));
  c.hw_fp8 = flags[0] != 0;
  c.hw_short = flags[1] != 0;
  return c;
}

void run_sweeps(report& rep, const options& opt, const device_caps& caps, deadline& dl) {
  const sweep_spec specs[] = {
      {&launch<subj::hw_e4m3, emu::e4m3_sat>, emu::e4m3_sat, "e4m3 rn.satfinite  kvq hw::e4m3x2 (cvt.rn.satfinite.e4m3x2.f32)", 1},
      {&launch<subj::cuda_e4m3_sat, emu::e4m3_sat>, emu::e4m3_sat, "e4m3 rn.satfinite  cuda_fp8 __nv_cvt_float_to_fp8", 0},
      {&launch<subj::cuda_e4m3_nosat, emu::e4m3_nosat>, emu::e4m3_nosat, "e4m3 rn.nosat      cuda_fp8 __nv_cvt_float_to_fp8", 0},
      {&launch<subj::hw_e5m2, emu::e5m2_sat>, emu::e5m2_sat, "e5m2 rn.satfinite  kvq hw::e5m2x2 (cvt.rn.satfinite.e5m2x2.f32)", 1},
      {&launch<subj::cuda_e5m2_sat, emu::e5m2_sat>, emu::e5m2_sat, "e5m2 rn.satfinite  cuda_fp8 __nv_cvt_float_to_fp8", 0},
      {&launch<subj::cuda_e5m2_nosat, emu::e5m2_nosat>, emu::e5m2_nosat, "e5m2 rn.nosat      cuda_fp8 __nv_cvt_float_to_fp8", 0},
      {&launch<subj::hw_e2m1, emu::e2m1_rn>, emu::e2m1_rn, "e2m1 rn.satfinite  kvq hw::e2m1x2 (cvt.rn.satfinite.e2m1x2.f32)", 2},
      {&launch<subj::cuda_e2m1_rn, emu::e2m1_rn>, emu::e2m1_rn, "e2m1 rn            cuda_fp4 __nv_cvt_float_to_fp4", 0},
      {&launch<subj::cuda_e2m1_rz, emu::e2m1_rz>, emu::e2m1_rz, "e2m1 rz            cuda_fp4 __nv_cvt_float_to_fp4", 0},
      {&launch<subj::hw_e3m2, emu::e3m2_rn>, emu::e3m2_rn, "e3m2 rn.satfinite  kvq hw::e3m2x2 (cvt.rn.satfinite.e3m2x2.f32)", 2},
      {&launch<subj::cuda_e3m2_rn, emu::e3m2_rn>, emu::e3m2_rn, "e3m2 rn            cuda_fp6 __nv_cvt_float_to_fp6", 0},
      {&launch<subj::cuda_e3m2_rz, emu::e3m2_rz>, emu::e3m2_rz, "e3m2 rz            cuda_fp6 __nv_cvt_float_to_fp6", 0},
      {&launch<subj::hw_e2m3, emu::e2m3_rn>, emu::e2m3_rn, "e2m3 rn.satfinite  kvq hw::e2m3x2 (cvt.rn.satfinite.e2m3x2.f32)", 2},
      {&launch<subj::cuda_e2m3_rn, emu::e2m3_rn>, emu::e2m3_rn, "e2m3 rn            cuda_fp6 __nv_cvt_float_to_fp6", 0},
      {&launch<subj::cuda_e2m3_rz, emu::e2m3_rz>, emu::e2m3_rz, "e2m3 rz            cuda_fp6 __nv_cvt_float_to_fp6", 0},
      {&launch<subj::hw_ue8m0_rz_sat, emu::ue8m0_rz_sat>, emu::ue8m0_rz_sat, "ue8m0 rz.satfinite kvq hw::ue8m0x2 (cvt.rz.satfinite.ue8m0x2.f32)", 2},
      {&launch<subj::hw_ue8m0_rz_nosat, emu::ue8m0_rz_nosat>, emu::ue8m0_rz_nosat, "ue8m0 rz           kvq hw::ue8m0x2 (cvt.rz.ue8m0x2.f32)", 2},
      {&launch<subj::hw_ue8m0_rp_sat, emu::ue8m0_rp_sat>, emu::ue8m0_rp_sat, "ue8m0 rp.satfinite kvq hw::ue8m0x2 (cvt.rp.satfinite.ue8m0x2.f32)", 2},
      {&launch<subj::hw_ue8m0_rp_nosat, emu::ue8m0_rp_nosat>, emu::ue8m0_rp_nosat, "ue8m0 rp           kvq hw::ue8m0x2 (cvt.rp.ue8m0x2.f32)", 2},
      {&launch<subj::cuda_ue8m0_rz_sat, emu::ue8m0_rz_sat>, emu::ue8m0_rz_sat, "ue8m0 rz.satfinite cuda_fp8 __nv_cvt_float_to_e8m0", 0},
      {&launch<subj::cuda_ue8m0_rz_nosat, emu::ue8m0_rz_nosat>, emu::ue8m0_rz_nosat, "ue8m0 rz           cuda_fp8 __nv_cvt_float_to_e8m0", 0},
      {&launch<subj::cuda_ue8m0_rp_sat, emu::ue8m0_rp_sat>, emu::ue8m0_rp_sat, "ue8m0 rp.satfinite cuda_fp8 __nv_cvt_float_to_e8m0", 0},
      {&launch<subj::cuda_ue8m0_rp_nosat, emu::ue8m0_rp_nosat>, emu::ue8m0_rp_nosat, "ue8m0 rp           cuda_fp8 __nv_cvt_float_to_e8m0", 0},
  };
  const int nspecs = static_cast<int>(sizeof specs / sizeof specs[0]);

  sweep_out* d_out = nullptr;
  KVQ_CUDA_CHECK(cudaMalloc(&d_out, sizeof(sweep_out)));
  std::vector<sweep_out> results(static_cast<std::size_t>(nspecs));
  std::vector<char> ran(static_cast<std::size_t>(nspecs), 0);
  std::vector<double> gpu_s(static_cast<std::size_t>(nspecs), 0.0);
  for (int k = 0; k < nspecs; ++k) {
    if (dl.left() < 30.0) break;  // keep time for the other stages
    KVQ_CUDA_CHECK(cudaMemset(d_out, 0, sizeof(sweep_out)));
    const auto t0 = std::chrono::steady_clock::now();
    specs[k].run(d_out);
    KVQ_CUDA_CHECK(cudaGetLastError());
    KVQ_CUDA_CHECK(cudaDeviceSynchronize());
    gpu_s[static_cast<std::size_t>(k)] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    KVQ_CUDA_CHECK(cudaMemcpy(&results[static_cast<std::size_t>(k)], d_out, sizeof(sweep_out), cudaMemcpyDeviceToHost));
    ran[static_cast<std::size_t>(k)] = 1;
  }
  KVQ_CUDA_CHECK(cudaFree(d_out));

  // Host re-hash of each emulator configuration that was swept (time-boxed).
  std::vector<host_hashes> host(static_cast<std::size_t>(emu::count));
  int distinct = 0;
  for (int k = 0; k < nspecs; ++k) {
    auto& h = host[static_cast<std::size_t>(specs[k].e)];
    if (ran[static_cast<std::size_t>(k)] && !h.done) {
      h.done = true;  // mark for counting
      ++distinct;
    }
  }
  for (auto& h : host) h.done = false;
  double budget = std::min(opt.host_budget_s, std::max(0.0, dl.left() - 60.0));
  const auto th0 = std::chrono::steady_clock::now();
  int left = distinct;
  for (int k = 0; k < nspecs; ++k) {
    auto& h = host[static_cast<std::size_t>(specs[k].e)];
    if (!ran[static_cast<std::size_t>(k)] || h.done) continue;
    const double used = std::chrono::duration<double>(std::chrono::steady_clock::now() - th0).count();
    host_hash(specs[k].e, h, std::max(0.5, (budget - used) / left));
    --left;
  }

  for (int k = 0; k < nspecs; ++k) {
    const sweep_spec& sp = specs[k];
    if (!ran[static_cast<std::size_t>(k)]) {
      rep.add("sweep", sp.name, verdict::skipped, "not run: time budget exhausted");
      continue;
    }
    const sweep_out& r = results[static_cast<std::size_t>(k)];
    const host_hashes& h = host[static_cast<std::size_t>(sp.e)];
    int checked = 0, equal_emu = 0, equal_subj = 0;
    for (int c = 0; c < kChunks; ++c) {
      if (!h.have[static_cast<std::size_t>(c)]) continue;
      ++checked;
      equal_emu += h.chunk[static_cast<std::size_t>(c)] == r.chunk_emulator[c];
      equal_subj += h.chunk[static_cast<std::size_t>(c)] == r.chunk_subject[c];
    }
    unsigned long long total_s = 0;
    for (int c = 0; c < kChunks; ++c) total_s += r.chunk_subject[c];
    std::string path = sp.needs == 0 ? "cuda device function"
                       : (sp.needs == 1 ? caps.hw_fp8 : caps.hw_short) ? "hardware cvt"
                                                                       : "software path (target lacks the cvt)";
    std::string d = "2^32 inputs, " + path + ", gpu " + std::to_string(gpu_s[static_cast<std::size_t>(k)]).substr(0, 5) +
                    " s; mismatches " + std::to_string(r.mismatches) + " (NaN inputs " +
                    std::to_string(r.nan_input_mismatches) + "); host-emulator chunk hashes equal " +
                    std::to_string(equal_emu) + "/" + std::to_string(checked) + " (device emulator), " +
                    std::to_string(equal_subj) + "/" + std::to_string(checked) + " (subject); subject hash " +
                    hex(kvq::device::hash_finish(total_s, 1ull << 32));
    for (unsigned i = 0; i < std::min<unsigned>(r.nrec, kRecords); ++i) {
      d += "; input " + hex(r.rec[i].input, 8) + " subject " + hex(r.rec[i].subject, 2) + " emulator " +
           hex(r.rec[i].emulator, 2);
    }
    verdict v = verdict::pass;
    if (checked == 0 || equal_emu != checked) v = verdict::fail;  // device vs host emulator must agree
    if (r.mismatches != 0) v = (r.mismatches == r.nan_input_mismatches && v == verdict::pass) ? verdict::hwdiff : verdict::fail;
    rep.add("sweep", sp.name, v, d);
  }
}

// ---- kvq::math over every float: GPU vs host, chunk hashes ---------------------------------

namespace {
using kvq::device::elementary;

template <elementary F>
__global__ void math_kernel(unsigned long long* chunk_sums) {
  const std::uint32_t chunk = blockIdx.y;
  const std::uint32_t i = (chunk << kChunkBits) | (blockIdx.x * blockDim.x + threadIdx.x);
  const float y = kvq::device::elementary_fn<float>{F}(kvq::bit_cast<float>(i));
  unsigned long long h = warp_sum(kvq::device::hash_term(i, kvq::bit_cast<std::uint32_t>(y)));
  if ((threadIdx.x & 31u) == 0) atomicAdd(&chunk_sums[chunk], h);
}

template <elementary F>
void math_launch(unsigned long long* d) {
  const dim3 grid((1u << kChunkBits) / 256u, kChunks);
  math_kernel<F><<<grid, 256>>>(d);
}

void host_math_hash(elementary f, host_hashes& h, double budget_s) {
  h.chunk.assign(kChunks, 0);
  h.have.assign(kChunks, 0);
  const auto order = chunk_order();
  const auto t0 = std::chrono::steady_clock::now();
  volatile bool stop = false;
  const kvq::device::elementary_fn<float> fn{f};
#pragma omp parallel for schedule(dynamic, 1)
  for (int k = 0; k < kChunks; ++k) {
    if (stop) continue;
    const int c = order[static_cast<std::size_t>(k)];
    const std::uint32_t base = static_cast<std::uint32_t>(c) << kChunkBits;
    unsigned long long sum = 0;
    for (std::uint32_t j = 0; j < (1u << kChunkBits); ++j) {
      const std::uint32_t in = base | j;
      sum += kvq::device::hash_term(in, kvq::bit_cast<std::uint32_t>(fn(kvq::bit_cast<float>(in))));
    }
    h.chunk[static_cast<std::size_t>(c)] = sum;
    h.have[static_cast<std::size_t>(c)] = 1;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > budget_s) stop = true;
  }
  h.done = true;
}
}  // namespace

void run_math_sweeps(report& rep, const options& opt, deadline& dl) {
  struct spec {
    elementary f;
    void (*run)(unsigned long long*);
  };
  const spec specs[] = {{elementary::exp, &math_launch<elementary::exp>},
                        {elementary::exp2, &math_launch<elementary::exp2>},
                        {elementary::log, &math_launch<elementary::log>},
                        {elementary::log2, &math_launch<elementary::log2>},
                        {elementary::sin, &math_launch<elementary::sin>},
                        {elementary::cos, &math_launch<elementary::cos>}};
  const int n = static_cast<int>(sizeof specs / sizeof specs[0]);
  unsigned long long* d = nullptr;
  KVQ_CUDA_CHECK(cudaMalloc(&d, kChunks * sizeof(unsigned long long)));
  const double budget = std::min(opt.host_budget_s, std::max(0.0, dl.left() - 60.0));
  const auto th0 = std::chrono::steady_clock::now();
  for (int k = 0; k < n; ++k) {
    const std::string name = std::string("kvq::math::") + kvq::device::to_string(specs[k].f) + " f32";
    if (dl.left() < 45.0) {
      rep.add("math", name, verdict::skipped, "time budget exhausted");
      continue;
    }
    KVQ_CUDA_CHECK(cudaMemset(d, 0, kChunks * sizeof(unsigned long long)));
    const auto t0 = std::chrono::steady_clock::now();
    specs[k].run(d);
    KVQ_CUDA_CHECK(cudaGetLastError());
    KVQ_CUDA_CHECK(cudaDeviceSynchronize());
    const double gpu_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::vector<unsigned long long> g(kChunks);
    KVQ_CUDA_CHECK(cudaMemcpy(g.data(), d, g.size() * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
    host_hashes h;
    const double used = std::chrono::duration<double>(std::chrono::steady_clock::now() - th0).count();
    host_math_hash(specs[k].f, h, std::max(0.5, (budget - used) / (n - k)));
    int checked = 0, equal = 0;
    std::string first;
    for (int c = 0; c < kChunks; ++c) {
      if (!h.have[static_cast<std::size_t>(c)]) continue;
      ++checked;
      if (h.chunk[static_cast<std::size_t>(c)] == g[static_cast<std::size_t>(c)]) ++equal;
      else if (first.empty()) first = "; first differing chunk " + std::to_string(c) + " (inputs " + hex(static_cast<std::uint64_t>(c) << kChunkBits, 8) + "..)";
    }
    unsigned long long total = 0;
    for (auto v : g) total += v;
    rep.add("math", name, (checked > 0 && equal == checked) ? verdict::pass : verdict::fail,
            "2^32 inputs on the gpu in " + std::to_string(gpu_s).substr(0, 5) + " s; host chunk hashes equal " +
                std::to_string(equal) + "/" + std::to_string(checked) + " chunks of 2^24; gpu hash " +
                hex(kvq::device::hash_finish(total, 1ull << 32)) + first);
  }
  KVQ_CUDA_CHECK(cudaFree(d));
}

// ---- hardware decodes: every code pair -> f16x2 / bf16x2 vs kvq::decode -------------

namespace {
__global__ void decode_kernel(std::uint32_t* out) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;  // < 65536
  out[i] = hw::e4m3x2_to_f16x2(static_cast<std::uint16_t>(i));
  out[65536 + i] = hw::e5m2x2_to_f16x2(static_cast<std::uint16_t>(i));
  out[2 * 65536 + i] = hw::e2m1x2_to_f16x2(static_cast<std::uint8_t>(i & 0xFFu));
  out[3 * 65536 + i] = hw::ue8m0x2_to_bf16x2(static_cast<std::uint16_t>(i));
}

template <class F>
void compare_decode(report& rep, const char* name, const std::uint32_t* got, int code_bits, bool bf16) {
  long mism = 0, nan_diff = 0;
  std::string first;
  const std::uint32_t pairs = 1u << (2 * code_bits);
  for (std::uint32_t i = 0; i < pairs; ++i) {
    for (int k = 0; k < 2; ++k) {
      const std::uint8_t code = static_cast<std::uint8_t>((i >> (k * code_bits)) & ((1u << code_bits) - 1u));
      const std::uint16_t h = static_cast<std::uint16_t>(got[i] >> (16 * k));
      const float v = bf16 ? kvq::bf16_to_float(h) : kvq::fp16_to_float(h);
      const float e = kvq::decode<F, float>(code);
      const bool same = kvq::bit_cast<std::uint32_t>(v) == kvq::bit_cast<std::uint32_t>(e);
      if (!same) {
        if (v != v && e != e) ++nan_diff;
        else ++mism;
        if (first.size() < 200)
          first += " code " + hex(code, 2) + " -> " + hex(h, 4) + " (kvq " + hex(kvq::bit_cast<std::uint32_t>(e), 8) + ")";
      }
    }
  }
  const verdict vd = mism ? verdict::fail : nan_diff ? verdict::hwdiff : verdict::pass;
  rep.add("decode", name, vd,
          "all code pairs; value mismatches " + std::to_string(mism) + ", NaN-pattern differences " +
              std::to_string(nan_diff) + (first.empty() ? "" : ";" + first));
}
}  // namespace

void run_hw_decode(report& rep, const device_caps& caps) {
  std::uint32_t* d = nullptr;
  KVQ_CUDA_CHECK(cudaMalloc(&d, 4 * 65536 * sizeof(std::uint32_t)));
  decode_kernel<<<256, 256>>>(d);
  KVQ_CUDA_CHECK(cudaGetLastError());
  std::vector<std::uint32_t> h(4 * 65536);
  KVQ_CUDA_CHECK(cudaMemcpy(h.data(), d, h.size() * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
  KVQ_CUDA_CHECK(cudaFree(d));
  if (caps.hw_fp8) {
    compare_decode<fmt::e4m3>(rep, "cvt.rn.f16x2.e4m3x2", h.data(), 8, false);
    compare_decode<fmt::e5m2>(rep, "cvt.rn.f16x2.e5m2x2", h.data() + 65536, 8, false);
  } else {
    rep.add("decode", "cvt.rn.f16x2.e4m3x2 / e5m2x2", verdict::skipped, "target below sm_89");
  }
  if (caps.hw_short) {
    compare_decode<fmt::e2m1>(rep, "cvt.rn.f16x2.e2m1x2", h.data() + 2 * 65536, 4, false);
    compare_decode<fmt::ue8m0>(rep, "cvt.rn.bf16x2.ue8m0x2", h.data() + 3 * 65536, 8, true);
  } else {
    rep.add("decode", "cvt.rn.f16x2.e2m1x2 / bf16x2.ue8m0x2", verdict::skipped,
            "target is not family-specific sm_100a/sm_120a class");
  }
}

}  // namespace kvq_gpu
