/// \file
/// kvq/cost/calibration.hpp — the two fitted parameters of the prefill cost model, fitted
/// on one published pair of kernel times; every other published number is held out
/// (docs/cost.md, docs/results/cost/published.csv).
///
/// The pair: FlashInfer issue #3484, RTX PRO 6000 Blackwell (sm_120), FA2
/// BatchPrefillWithPagedKVCacheWrapper, batch 1, 8192 queries x 8192 keys, 16 query heads,
/// 2 KV heads, head_dim 128, BF16 queries; median 1.714 ms with a BF16 KV cache, 2.212 ms
/// with fp8_e4m3. Its reported 320.7 TFLOP/s at 1.714 ms is 4 L^2 Hq d FLOPs: no causal mask.
#pragma once

#include <kvq/cost/prefill.hpp>

namespace kvq {
namespace cost {

/// The published pair the calibration is fitted on.
struct fit_point {
  double bf16_ms = 1.714;   ///< FlashInfer #3484, kv_dtype bfloat16
  double fp8_ms = 2.212;    ///< FlashInfer #3484, kv_dtype fp8_e4m3
  std::size_t L = 8192;     ///< s_qo = s_kv
  bool causal = false;      ///< the benchmark's FLOP count is the unmasked one
};

/// The attention shape of the benchmark (only the attention fields matter).
inline model_shape flashinfer_bench_shape() {
  return {"flashinfer-3484", 1, 16, 2, 128, 2048, 8192, 32000, 0, 0, 0, 0, "FlashInfer issue #3484 benchmark command"};
}

/// eta_tensor from the BF16 time (MMA time = time - exponentials), then dequant_slots
/// from the FP8 - BF16 difference (conversions only). Exact inverse of attention_time for
/// a compute-bound kernel; kvq::cost tests check that it reproduces both times.
inline calibration fit_calibration(const fit_point& p = {}) {
  const gpu_spec& g = find_gpu("rtx-pro-6000");
  const model_shape m = flashinfer_bench_shape();
  calibration c;
  const double L = static_cast<double>(p.L);
  const double scores = (p.causal ? 0.5 : 1.0) * L * L * static_cast<double>(m.q_heads);
  const double t_exp = scores / (g.sfu_gops * 1e9);
  c.eta_tensor = attention_flops(m, L, p.causal) / (g.bf16_tflops * 1e12) / (p.bf16_ms * 1e-3 - t_exp);
  const scheme_cost fp8 = describe_scheme("fp8_e4m3", m.head_dim);
  c.dequant_slots = (p.fp8_ms - p.bf16_ms) * 1e-3 * g.alu_per_s() /
                    (dequant_values(m, L, c.q_tile, p.causal) * fp8.dequant_ops);
  return c;
}

/// The calibration the command and the documentation use.
inline const calibration& default_calibration() {
  static const calibration c = fit_calibration();
  return c;
}

}  // namespace cost
}  // namespace kvq
