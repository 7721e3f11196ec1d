/// \file
/// kvq/cost/gpu.hpp — the GPU constants of the prefill cost model (kvq/cost/prefill.hpp).
///
/// Every number is a dense (no structured sparsity) peak from the vendor's datasheet or
/// architecture whitepaper named in `source`; derived numbers say how they are derived.
/// Tensor rates are with FP32 accumulation, which attention and GEMM kernels use. A rate
/// of 0 means the GPU has no tensor-core path for that input format.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace kvq {
namespace cost {

/// Peak rates of one GPU.
struct gpu_spec {
  const char* key;            ///< command-line name
  const char* name;           ///< marketing name
  double hbm_gbps;            ///< DRAM bandwidth, GB/s (1e9 bytes/s)
  double bf16_tflops;         ///< dense BF16 tensor throughput, FP32 accumulate
  double fp8_tflops;          ///< dense FP8 (E4M3) tensor throughput; 0 = none
  double fp4_tflops;          ///< dense FP4 (E2M1, block-scaled) tensor throughput; 0 = none
  double fp32_tflops;         ///< non-tensor FP32 FMA throughput (2 flops per FMA)
  double sfu_gops;            ///< ex2 (special-function unit) results per second, 1e9/s
  double launch_us;           ///< smallest time of one kernel (launch floor), microseconds
  const char* source;         ///< where the numbers come from
  /// Non-tensor instruction issue rate, instructions/s: one FMA pipe result per core per
  /// clock, i.e. half the FP32 flop rate. Conversions and shuffles of the dequantize path
  /// are counted in these slots.
  double alu_per_s() const { return fp32_tflops * 1e12 / 2.0; }
};

// The launch floor of 3 us is the usual host launch latency of an empty kernel without
// CUDA graphs (the order of magnitude tests/gpu/cost_timing.cu measures); it is not a
// datasheet number and is the same for every GPU here until measured.
//
// SFU rates: 16 SFUs per SM (4 per SM sub-partition, every architecture whitepaper since
// Volta) x SMs x boost clock.
/// Every GPU the model knows, with the source of each number.
inline const std::vector<gpu_spec>& gpus() {
  static const std::vector<gpu_spec> table = {
      {"a100", "A100 SXM4 80GB", 2039.0, 312.0, 0.0, 0.0, 19.5, 108 * 16 * 1.410, 3.0,
       "NVIDIA A100 Tensor Core GPU datasheet (80GB SXM: 2039 GB/s, BF16 312 TFLOPS dense, FP32 19.5 "
       "TFLOPS); NVIDIA A100 Tensor Core GPU Architecture whitepaper (108 SMs, 1410 MHz boost); no FP8/FP4 "
       "tensor cores"},
      {"h100", "H100 SXM5 80GB", 3350.0, 989.5, 1979.0, 0.0, 66.9, 132 * 16 * 1.980, 3.0,
       "NVIDIA H100 Tensor Core GPU datasheet (SXM: 3.35 TB/s, BF16 1979 / FP8 3958 TFLOPS with sparsity, "
       "halved; FP32 67 TFLOPS); NVIDIA H100 Tensor Core GPU Architecture whitepaper (132 SMs; 1980 MHz max "
       "boost); no FP4 tensor cores"},
      {"h200", "H200 SXM 141GB", 4800.0, 989.5, 1979.0, 0.0, 66.9, 132 * 16 * 1.980, 3.0,
       "NVIDIA H200 Tensor Core GPU datasheet (SXM: 4.8 TB/s; compute as H100 SXM); SFU as H100"},
      {"b200", "B200 (HGX B200, per GPU)", 8000.0, 2250.0, 4500.0, 9000.0, 75.0, 148 * 16 * 1.965, 3.0,
       "NVIDIA HGX B200 datasheet, per GPU (8 TB/s; BF16 4.5 / FP8 9 / FP4 18 PFLOPS with sparsity, "
       "halved; FP32 600 TFLOPS for 8 GPUs); NVIDIA Blackwell Architecture Technical Brief (148 SMs); "
       "1965 MHz boost is an assumption"},
      {"rtx-pro-6000", "RTX PRO 6000 Blackwell (sm_120)", 1792.0, 500.0, 1000.0, 2000.0, 125.0,
       188 * 16 * 2.617, 3.0,
       "NVIDIA RTX PRO 6000 Blackwell datasheet (1792 GB/s; 4000 AI TOPS = FP4 with sparsity, so FP4 2000, "
       "FP8 1000, BF16 500 dense; FP32 125 TFLOPS; 188 SMs, 2617 MHz boost)"},
      {"rtx4060", "GeForce RTX 4060 (sm_89)", 272.0, 30.2, 60.5, 0.0, 15.11, 24 * 16 * 2.460, 3.0,
       "NVIDIA GeForce RTX 4060 specifications (272 GB/s, 15.11 TFLOPS FP32, 242 AI TOPS = FP8 with "
       "sparsity and FP16 accumulate); NVIDIA Ada Lovelace GPU Architecture whitepaper ratios for GeForce "
       "(FP32 accumulate at half the FP16-accumulate rate): FP8 60.5, BF16 30.2 dense; 24 SMs, 2460 MHz"},
  };
  return table;
}

/// The keys of gpus(), comma-separated.
inline std::string gpu_keys() {
  std::string s;
  for (const auto& g : gpus()) s += (s.empty() ? "" : ", ") + std::string(g.key);
  return s;
}

/// The GPU with this key; throws std::invalid_argument naming the allowed keys.
inline const gpu_spec& find_gpu(const std::string& key) {
  for (const auto& g : gpus())
    if (key == g.key) return g;
  throw std::invalid_argument("unknown GPU '" + key + "' (allowed: " + gpu_keys() + ")");
}

}  // namespace cost
}  // namespace kvq
