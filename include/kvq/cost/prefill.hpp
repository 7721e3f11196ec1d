/// \file
/// kvq/cost/prefill.hpp — a roofline model of prefill time (time to first token) with and
/// without a quantized KV cache.
///
/// One prefill of L tokens, batch 1, per layer:
/// ~~~
///   linear     QKV, O and MLP GEMMs: max(4 launch floors, FLOPs / tensor rate, weight bytes / bandwidth)
///   attention  max(floor, t_mma + t_exp + t_convert, bytes / bandwidth)
///   store      writing K and V to the cache: max(floor, bytes / bandwidth, quantize ops / ALU rate)
///              per kernel; `unfused` adds a scale/clamp pass and a cast pass per K and V
///   q quant    fp8_mma only: Q to FP8, a separate kernel unless the design is fused
/// ~~~
/// plus the LM head for the last token. Each kernel is a roofline max(compute, memory)
/// with a launch floor; kernels run one after another. Inside the attention kernel the
/// tensor-core work, the softmax exponentials and the conversions are summed, not
/// overlapped: the same warps issue them in a FlashAttention-2-style kernel (FA3/FA4
/// overlap part of it, so the model is pessimistic for those).
///
/// Attention FLOPs: QK^T and PV, 2 x 2 L^2 d per head, half of it under a causal mask:
/// 2 L^2 Hq d per layer (causal), 4 L^2 Hq d (not causal). Exponentials: L^2 Hq / 2.
///
/// Dequantize-in-tile reads: every query tile of `q_tile` rows of one query head converts
/// the K and V tiles of its (causal) prefix, so a layer converts Hq (L / q_tile) (L / 2) 2 d
/// values: the cache is re-converted L / q_tile times per query head. Each conversion costs
/// `dequant_ops(scheme)` structural instructions (kvq::cost::dequant_ops) times the fitted
/// `dequant_slots` issue slots each. The FP8-MMA read converts no K or V but runs the
/// MMAs at the FP8 rate, casts P to FP8 (one instruction slot per score) and quantizes Q.
#pragma once

#include <kvq/cost/gpu.hpp>
#include <kvq/cost/shape.hpp>
#include <kvq/kv/registry.hpp>
#include <kvq/kv/store.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <variant>

namespace kvq {
namespace cost {

/// How the cache write quantizes.
enum class store_design {
  fused,    ///< one kernel reads new K/V, quantizes and writes the cache (vLLM reshape_and_cache)
  unfused,  ///< a scale/clamp pass and a cast pass per K and V, then the store (mini-sglang #132)
};
/// How attention reads a quantized cache during prefill.
enum class read_path {
  dequant,  ///< convert K/V tiles to BF16 in registers, BF16 MMA (FlashInfer FA2)
  fp8_mma,  ///< quantize Q and P, FP8 MMA (FA3 FP8, TRT-LLM FP8 FMHA)
  fresh,    ///< attend to the fresh 16-bit K/V, quantize only on store (16-bit prefill, low-bit decode)
};

/// The command-line name of a store design.
inline const char* to_string(store_design d) { return d == store_design::fused ? "fused" : "unfused"; }
/// The command-line name of a read path.
inline const char* to_string(read_path r) {
  return r == read_path::dequant ? "dequant" : r == read_path::fp8_mma ? "fp8-mma" : "fresh";
}

/// The free parameters; kvq::cost::default_calibration() fits them.
struct calibration {
  double eta_tensor = 0.7;      ///< achieved fraction of the tensor-core peak (GEMMs and attention MMAs)
  double dequant_slots = 1.0;   ///< ALU issue slots one structural conversion op takes in practice
  std::size_t q_tile = 128;     ///< query rows per attention tile (FlashInfer FA2 for head_dim 128)
};

/// What the model needs to know about a KV scheme.
struct scheme_cost {
  std::string name;             ///< registry name
  kv::kv_format format;         ///< storage format
  bool high_precision = false;  ///< bf16 / fp16 / fp32 storage (kv::hp_format): no dequantize counted
  double bits = 16.0;           ///< stored bits per value (kv::bits_per_value)
  double dequant_ops = 0.0;     ///< structural instructions to turn one stored value into BF16
  double quant_ops = 0.0;       ///< structural instructions to quantize one value on store
  bool fp8_codes = false;       ///< codes are FP8 (an FP8 MMA can read them)
};

/// Structural dequantize instructions per value (a count of what a kernel must issue,
/// not a measurement): a paired conversion of two 8-bit codes (cvt ...x2: 0.5), the
/// permute that moves 8-bit fragments into the 16-bit MMA layout (prmt: 0.5), unpacking
/// two sub-byte codes from a byte (lop3/shift: 0.5), applying a block scale to two values
/// (hmul2: 0.5) plus decoding one scale per block (1 / block). 16-bit storage: 0.
inline double dequant_ops(bool high_precision, double bits, std::size_t block, std::size_t head_dim) {
  if (high_precision) return 0.0;
  double ops = 0.5 + 0.5;
  if (bits < 7.0) ops += 0.5;  // codes of fewer than 8 bits share a byte
  if (block != 1) ops += 0.5 + 1.0 / static_cast<double>(block == 0 ? head_dim : block);
  return ops;
}
/// Structural quantize instructions per value: scale multiply and paired cast (1.5), and
/// for block scales one max per value plus ~8 ops per block for the scale (amax reduction
/// steps, reciprocal, scale encode).
inline double quant_ops(bool high_precision, std::size_t block, std::size_t head_dim) {
  if (high_precision) return 0.0;
  double ops = 1.5;
  if (block != 1) ops += 1.0 + 8.0 / static_cast<double>(block == 0 ? head_dim : block);
  return ops;
}

/// The scheme's costs from the registry; throws std::invalid_argument for an unknown
/// scheme, one without a storage format, or a head_dim it cannot store.
inline scheme_cost describe_scheme(const std::string& name, std::size_t head_dim) {
  const std::shared_ptr<const kv::scheme> s = kv::registry::global().lookup(name);
  if (!s || !s->format) throw std::invalid_argument("unknown scheme '" + name + "' (allowed: " + kv::scheme_list() + ")");
  s->check_head_dim(head_dim);
  scheme_cost c;
  c.name = s->name;
  c.format = *s->format;
  c.high_precision = std::holds_alternative<kv::hp_format>(c.format);
  c.bits = kv::bits_per_value(c.format, head_dim, {}, s->name);
  c.dequant_ops = dequant_ops(c.high_precision, c.bits, s->block, head_dim);
  c.quant_ops = quant_ops(c.high_precision, s->block, head_dim);
  c.fp8_codes = !c.high_precision && (s->name.rfind("fp8", 0) == 0 || s->name.rfind("mxfp8", 0) == 0);
  return c;
}

/// A kernel as a roofline with a launch floor: max(floor, compute time, memory time), seconds.
inline double kernel_time(double compute_s, double bytes, const gpu_spec& g, double floor_kernels = 1.0) {
  return std::max(floor_kernels * g.launch_us * 1e-6, std::max(compute_s, bytes / (g.hbm_gbps * 1e9)));
}

/// Attention FLOPs of one layer: 2 L^2 Hq d causal, 4 L^2 Hq d otherwise.
inline double attention_flops(const model_shape& m, double L, bool causal = true) {
  return (causal ? 2.0 : 4.0) * L * L * static_cast<double>(m.q_heads) * static_cast<double>(m.head_dim);
}
/// K and V values one layer's dequantize-in-tile read converts: Hq (L / q_tile) (prefix) 2 d.
inline double dequant_values(const model_shape& m, double L, std::size_t q_tile, bool causal = true) {
  return static_cast<double>(m.q_heads) * (L / static_cast<double>(q_tile)) * (causal ? L / 2.0 : L) * 2.0 *
         static_cast<double>(m.head_dim);
}
/// Bytes one layer's cache holds for L tokens (K and V, all KV heads), kv::stored_bytes.
inline double cache_bytes(const model_shape& m, const scheme_cost& s, std::size_t L) {
  return static_cast<double>(m.kv_heads) *
         static_cast<double>(kv::stored_bytes(s.format, kv::kv_role::key, m.head_dim, L, {}, s.name) +
                             kv::stored_bytes(s.format, kv::kv_role::value, m.head_dim, L, {}, s.name));
}

/// Times of one layer's kernels and of the whole prefill, seconds.
struct layer_times {
  double linear = 0;     ///< QKV, O and MLP GEMMs
  double attention = 0;  ///< the attention kernel
  double store = 0;      ///< writing K and V to the cache (all its kernels)
  double q_quant = 0;    ///< quantizing Q (FP8 MMA read, unfused design)
  /// Sum of the four.
  double total() const { return linear + attention + store + q_quant; }
};
/// One prefill: per layer times, the LM head, the total.
struct prefill_times {
  layer_times layer;       ///< one layer (every layer is the same)
  double lm_head = 0;      ///< the LM head for the last token
  std::size_t layers = 0;  ///< number of layers
  /// layers x one layer + LM head.
  double total() const { return static_cast<double>(layers) * layer.total() + lm_head; }
};

/// Attention kernel time of one layer, seconds.
inline double attention_time(const gpu_spec& g, const model_shape& m, const scheme_cost& s, read_path r, double L,
                             const calibration& cal, bool causal = true) {
  const bool quantized_read = !s.high_precision && r != read_path::fresh;
  const bool mma8 = quantized_read && r == read_path::fp8_mma;
  const double peak = (mma8 ? g.fp8_tflops : g.bf16_tflops) * 1e12 * cal.eta_tensor;
  const double scores = (causal ? 0.5 : 1.0) * L * L * static_cast<double>(m.q_heads);
  double t = attention_flops(m, L, causal) / peak + scores / (g.sfu_gops * 1e9);
  if (quantized_read && r == read_path::dequant)
    t += dequant_values(m, L, cal.q_tile, causal) * s.dequant_ops * cal.dequant_slots / g.alu_per_s();
  // The P cast is one plain paired conversion and permute per score at full issue rate:
  // the fitted dequant_slots measures FlashInfer FA2's per-fragment shuffles of K/V, which
  // the FP8-MMA kernels (FA3, TRT-LLM) do not have.
  if (mma8) t += scores * 1.0 / g.alu_per_s();
  // Memory: Q read and O written once, K and V once per query tile (L2 absorbs most of it).
  const double qo = 2.0 * L * static_cast<double>(m.q_heads * m.head_dim) * 2.0;
  const double kv = static_cast<double>(m.kv_heads * m.head_dim) * 2.0 * L * (quantized_read ? s.bits / 8.0 : 2.0);
  return kernel_time(t, qo + kv, g);
}

/// Cache-write time of one layer, seconds (K and V of L new tokens).
inline double store_time(const gpu_spec& g, const model_shape& m, const scheme_cost& s, store_design d, std::size_t L) {
  const double values = 2.0 * static_cast<double>(L * m.kv_heads * m.head_dim);
  const double stored = cache_bytes(m, s, L);
  const double quant_s = values * s.quant_ops / g.alu_per_s();
  if (s.high_precision || d == store_design::fused) return kernel_time(quant_s, values * 2.0 + stored, g);
  // Unfused: per K and V a scale/clamp pass (16-bit in and out) and a cast pass (16-bit
  // in, stored format out), then the store copies the stored bytes into the cache.
  const double half = values / 2.0;
  const double clamp = 2.0 * kernel_time(0.0, half * 4.0, g);
  const double cast = 2.0 * kernel_time(quant_s / 2.0, half * 2.0 + stored / 2.0, g);
  return clamp + cast + kernel_time(0.0, 2.0 * stored, g);
}

/// The whole prefill of L tokens; throws std::invalid_argument when the read path needs a
/// tensor-core format the GPU or the scheme lacks.
inline prefill_times prefill(const gpu_spec& g, const model_shape& m, const scheme_cost& s, store_design d, read_path r,
                             std::size_t L, const calibration& cal, bool causal = true) {
  m.check();
  if (L == 0) throw std::invalid_argument("prefill length 0");
  if (r == read_path::fp8_mma && !s.high_precision) {
    if (g.fp8_tflops <= 0) throw std::invalid_argument(std::string(g.key) + " has no FP8 tensor cores (read fp8-mma)");
    if (!s.fp8_codes) throw std::invalid_argument("scheme " + s.name + " does not store FP8 codes (read fp8-mma)");
  }
  const double Ld = static_cast<double>(L);
  prefill_times p;
  p.layers = m.layers;
  const double flops = 2.0 * Ld * (m.attn_params() + m.mlp_params_active());
  const double weights = 2.0 * (m.attn_params() + m.mlp_params_stored());
  p.layer.linear = kernel_time(flops / (g.bf16_tflops * 1e12 * cal.eta_tensor), weights, g, 4.0);
  p.layer.attention = attention_time(g, m, s, r, Ld, cal, causal);
  p.layer.store = store_time(g, m, s, d, L);
  if (r == read_path::fp8_mma && !s.high_precision && d == store_design::unfused)
    p.layer.q_quant = kernel_time(0.0, Ld * static_cast<double>(m.q_heads * m.head_dim) * 3.0, g);
  const double head = static_cast<double>(m.hidden) * static_cast<double>(m.vocab);
  p.lm_head = kernel_time(2.0 * head / (g.bf16_tflops * 1e12 * cal.eta_tensor), 2.0 * head, g);
  return p;
}

/// The 16-bit baseline every overhead is measured against: bf16 cache, fused store.
inline prefill_times baseline(const gpu_spec& g, const model_shape& m, std::size_t L, const calibration& cal,
                              bool causal = true) {
  return prefill(g, m, describe_scheme("bf16", m.head_dim), store_design::fused, read_path::dequant, L, cal, causal);
}

/// TTFT overhead of a scheme: its prefill time over the bf16 baseline's, minus 1.
inline double overhead(const gpu_spec& g, const model_shape& m, const scheme_cost& s, store_design d, read_path r,
                       std::size_t L, const calibration& cal, bool causal = true) {
  return prefill(g, m, s, d, r, L, cal, causal).total() / baseline(g, m, L, cal, causal).total() - 1.0;
}

/// Slope of the overhead in L: change in overhead per doubling of L, centred at L
/// (overhead(sqrt2 L) - overhead(L / sqrt2)).
inline double overhead_slope(const gpu_spec& g, const model_shape& m, const scheme_cost& s, store_design d, read_path r,
                             std::size_t L, const calibration& cal, bool causal = true) {
  const double r2 = std::sqrt(2.0);
  const auto hi = static_cast<std::size_t>(std::llround(static_cast<double>(L) * r2));
  const auto lo = std::max<std::size_t>(1, static_cast<std::size_t>(std::llround(static_cast<double>(L) / r2)));
  return overhead(g, m, s, d, r, hi, cal, causal) - overhead(g, m, s, d, r, lo, cal, causal);
}

/// The overhead as L grows without bound: attention (L^2) dominates, so it is the ratio
/// of the attention kernels' times minus 1.
inline double overhead_limit(const gpu_spec& g, const model_shape& m, const scheme_cost& s, read_path r,
                             const calibration& cal, bool causal = true) {
  const double L = 16777216.0;
  const scheme_cost b = describe_scheme("bf16", m.head_dim);
  return attention_time(g, m, s, r, L, cal, causal) / attention_time(g, m, b, read_path::dequant, L, cal, causal) - 1.0;
}

}  // namespace cost
}  // namespace kvq
