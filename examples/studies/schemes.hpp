// studies/schemes.hpp — the KV-cache storage schemes the studies compare, by name.
//
// Each entry quantizes a (tokens x head_dim) row-major K or V matrix of one head with
// a kvq::block recipe and dequantizes it back to float: "storage-only" emulation,
// what the attention kernel reads after the cache round trip. The recipes, their
// operation order and their reference kernels are documented in <kvq/block.hpp>; this
// file only decides which tensor axis forms the blocks and which tensor-level scale
// each scheme is given:
//
//   bf16              element-wise bf16 round-to-nearest-even (the unquantized baseline)
//   fp8_e4m3          vLLM fp8 per-tensor, k_scale = v_scale = 1.0 (vLLM's default)
//   fp8_e4m3_cal      vLLM fp8 per-tensor, scales calibrated from the data and frozen
//                     (k_scale = amax/200, v_scale = amax/100, vLLM calc_kv_scales)
//   fp8_e5m2          vLLM fp8_e5m2 per-tensor, scale 1.0
//   fp8_tokhead       vLLM fp8_per_token_head: one fp32 scale per (token, head)
//   nvfp4_te          NVFP4, TransformerEngine recipe, tensor amax from the data
//   nvfp4_vllm        NVFP4, vLLM KV-cache store, k_scale = amax/2688 (ModelOpt calibration)
//   mxfp4_floor       MXFP4 (e2m1, 32-element blocks), OCP floor scale rule
//   mxfp4_rceil       MXFP4, round-up scale rule (cuBLAS / CUTLASS / TransformerEngine)
//   mxfp8             MXFP8 (e4m3, 32-element blocks), round-up scale rule (TransformerEngine)
//   kivi_int4         KIVI INT4: keys per channel (groups of 32 tokens), values per token
//                     (groups of 32 channels); the most recent `kivi_residual` tokens,
//                     and the tokens of an incomplete key group, stay fp16 (KIVI's
//                     residual window)
//
// Blocks always run along head_dim (the contiguous axis of a KV cache row), except
// KIVI's per-channel keys. Block scales therefore mix the channels of one token: a
// key channel outlier owns the scale of its block.
#pragma once

#include "harness.hpp"

#include <kvq/block.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kvq::study {

enum class kv_role { key, value };

// How a scheme groups elements under one scale, to tell which elements share a scale
// with an outlier channel.
enum class scale_grouping {
  none,        // no scale (bf16)
  tensor,      // one scale for the whole tensor
  row_blocks,  // blocks of `block` consecutive channels of one token (per-token-head: block = head_dim)
  channel      // per channel, groups along tokens (KIVI keys)
};

struct scheme_spec {
  std::string name;
  std::string description;
  std::string recipe;           // kvq::block recipe name
  std::size_t block = 1;        // elements per scale along head_dim (0 = the whole head_dim)
  bool needs_multiple = false;  // head_dim must be a multiple of `block`
  std::function<double(std::size_t head_dim)> bits_per_value;  // stored bits/element, scales included
  std::function<scale_grouping(kv_role)> grouping;
  // out = dequantize(quantize(in)); tokens x head_dim row-major.
  std::function<void(kv_role, const float* in, float* out, std::size_t tokens, std::size_t head_dim)> qdq;
};

// Tokens KIVI keeps in fp16 at the end of the context (KIVI's residual length R).
inline constexpr std::size_t kivi_residual = 128;
inline constexpr std::size_t kivi_group_size = 32;

namespace detail {

template <class S>
void qdq_rows(const S& s, const float* in, float* out, std::size_t n, kvq::block::tensor_value tv) {
  kvq::block::quantized_tensor<S> q(s);
  q.assign(in, n, tv);
  q.dequantize(out, n);
}

inline void bf16_round(const float* in, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = kvq::bf16_to_float(kvq::float_to_bf16_rn(in[i]));
}

inline void fp16_round(const float* in, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = kvq::block::fp16_input::round(in[i]);
}

inline float amax_of(const float* x, std::size_t n) {
  return kvq::block::tensor_amax(x, n, kvq::block::amax_nan::propagate);
}

// KIVI: keys quantized per channel in groups of 32 tokens, values per token in
// groups of 32 channels; the last kivi_residual tokens (and, for keys, the tokens of
// an incomplete group) stay fp16.
inline void kivi_qdq(kv_role role, const float* in, float* out, std::size_t n, std::size_t d) {
  const std::size_t G = kivi_group_size;
  const std::size_t window = n < kivi_residual ? n : kivi_residual;
  std::size_t nq = n - window;
  if (role == kv_role::key) nq -= nq % G;
  kvq::block::kivi_int4 s;
  s.group = G;
  if (nq > 0) {
    if (role == kv_role::key) {
      std::vector<float> col(nq), back(nq);
      for (std::size_t c = 0; c < d; ++c) {
        for (std::size_t t = 0; t < nq; ++t) col[t] = in[t * d + c];
        qdq_rows(s, col.data(), back.data(), nq, kvq::block::tensor_value::computed());
        for (std::size_t t = 0; t < nq; ++t) out[t * d + c] = back[t];
      }
    } else {
      qdq_rows(s, in, out, nq * d, kvq::block::tensor_value::computed());
    }
  }
  fp16_round(in + nq * d, out + nq * d, (n - nq) * d);
}

}  // namespace detail

inline const std::vector<scheme_spec>& all_schemes() {
  namespace b = kvq::block;
  using detail::qdq_rows;
  static const std::vector<scheme_spec> v = [] {
    std::vector<scheme_spec> s;
    auto fixed = [](double bits) { return [bits](std::size_t) { return bits; }; };
    auto always = [](scale_grouping g) { return [g](kv_role) { return g; }; };

    s.push_back({"bf16", "bf16 round-to-nearest-even, no scale (baseline)", "bf16", 1, false, fixed(16.0),
                 always(scale_grouping::none),
                 [](kv_role, const float* in, float* out, std::size_t n, std::size_t d) {
                   detail::bf16_round(in, out, n * d);
                 }});
    s.push_back({"fp8_e4m3", "FP8 e4m3 per-tensor, k_scale = v_scale = 1 (vLLM default)", b::fp8_e4m3_per_tensor::name,
                 0, false, fixed(8.0), always(scale_grouping::tensor),
                 [](kv_role, const float* in, float* out, std::size_t n, std::size_t d) {
                   qdq_rows(b::fp8_e4m3_per_tensor{}, in, out, n * d, b::tensor_value::given(1.0f));
                 }});
    s.push_back({"fp8_e4m3_cal", "FP8 e4m3 per-tensor, calibrated k_scale = amax/200, v_scale = amax/100 (vLLM)",
                 b::fp8_e4m3_per_tensor::name, 0, false, fixed(8.0), always(scale_grouping::tensor),
                 [](kv_role r, const float* in, float* out, std::size_t n, std::size_t d) {
                   const float amax = detail::amax_of(in, n * d);
                   const float sc = b::vllm_calibrated_scale(
                       amax, r == kv_role::key ? b::vllm_k_scale_constant : b::vllm_v_scale_constant);
                   qdq_rows(b::fp8_e4m3_per_tensor{}, in, out, n * d, b::tensor_value::given(sc));
                 }});
    s.push_back({"fp8_e5m2", "FP8 e5m2 per-tensor, scale 1 (vLLM fp8_e5m2)", b::fp8_e5m2_per_tensor::name, 0, false,
                 fixed(8.0), always(scale_grouping::tensor),
                 [](kv_role, const float* in, float* out, std::size_t n, std::size_t d) {
                   qdq_rows(b::fp8_e5m2_per_tensor{}, in, out, n * d, b::tensor_value::given(1.0f));
                 }});
    s.push_back({"fp8_tokhead", "FP8 e4m3 with one fp32 scale per (token, head) (vLLM fp8_per_token_head)",
                 b::fp8_per_token_head::name, 0, false, [](std::size_t d) { return 8.0 + 32.0 / double(d); },
                 always(scale_grouping::row_blocks),
                 [](kv_role, const float* in, float* out, std::size_t n, std::size_t d) {
                   b::fp8_per_token_head sch;
                   sch.head_dim = d;
                   qdq_rows(sch, in, out, n * d, b::tensor_value::computed());
                 }});
    s.push_back({"nvfp4_te", "NVFP4 (e2m1, 16-element ue4m3 scales), TransformerEngine recipe", b::nvfp4_te::name, 16,
                 true, fixed(4.5), always(scale_grouping::row_blocks),
                 [](kv_role, const float* in, float* out, std::size_t n, std::size_t d) {
                   qdq_rows(b::nvfp4_te{}, in, out, n * d, b::tensor_value::computed());
                 }});
    s.push_back({"nvfp4_vllm", "NVFP4, vLLM KV-cache store, k_scale = amax/2688 (IEEE rcp model)",
                 b::nvfp4_vllm<>::name, 16, true, fixed(4.5), always(scale_grouping::row_blocks),
                 [](kv_role, const float* in, float* out, std::size_t n, std::size_t d) {
                   qdq_rows(b::nvfp4_vllm<>{}, in, out, n * d, b::tensor_value::computed());
                 }});
    s.push_back({"mxfp4_floor", "MXFP4 (e2m1, 32-element ue8m0 scales), OCP floor rule", b::mxfp4_floor::name, 32, true,
                 fixed(4.25), always(scale_grouping::row_blocks),
                 [](kv_role, const float* in, float* out, std::size_t n, std::size_t d) {
                   qdq_rows(b::mxfp4_floor{}, in, out, n * d, b::tensor_value::computed());
                 }});
    s.push_back({"mxfp4_rceil", "MXFP4, round-up scale rule (cuBLAS/CUTLASS/TransformerEngine)", b::mxfp4_rceil::name,
                 32, true, fixed(4.25), always(scale_grouping::row_blocks),
                 [](kv_role, const float* in, float* out, std::size_t n, std::size_t d) {
                   qdq_rows(b::mxfp4_rceil{}, in, out, n * d, b::tensor_value::computed());
                 }});
    s.push_back({"mxfp8", "MXFP8 (e4m3, 32-element ue8m0 scales), round-up rule (TransformerEngine)",
                 b::mxfp8_e4m3_rceil::name, 32, true, fixed(8.25), always(scale_grouping::row_blocks),
                 [](kv_role, const float* in, float* out, std::size_t n, std::size_t d) {
                   qdq_rows(b::mxfp8_e4m3_rceil{}, in, out, n * d, b::tensor_value::computed());
                 }});
    s.push_back({"kivi_int4", "KIVI INT4: keys per channel, values per token, groups of 32, fp16 residual window of 128",
                 b::kivi_int4::name, 32, true, fixed(4.0 + 64.0 / 32.0),
                 [](kv_role r) { return r == kv_role::key ? scale_grouping::channel : scale_grouping::row_blocks; },
                 detail::kivi_qdq});
    return s;
  }();
  return v;
}

inline std::vector<std::string> scheme_names() {
  std::vector<std::string> n;
  for (const auto& s : all_schemes()) n.push_back(s.name);
  return n;
}

inline const scheme_spec& find_scheme(const std::string& name) {
  for (const auto& s : all_schemes())
    if (s.name == name) return s;
  throw usage_error("unknown scheme '" + name + "' (allowed: " + join(scheme_names()) + ")");
}

// Effective block of a scheme along head_dim (per-token-head: the whole head_dim).
inline std::size_t row_block(const scheme_spec& s, std::size_t head_dim) { return s.block ? s.block : head_dim; }

// head_dim must be a multiple of every chosen scheme's block size.
inline void check_head_dim(const std::vector<std::string>& schemes, long long head_dim) {
  for (const auto& n : schemes) {
    const scheme_spec& s = find_scheme(n);
    if (s.needs_multiple && head_dim % static_cast<long long>(s.block) != 0)
      throw usage_error("--head-dim " + std::to_string(head_dim) + " is not a multiple of the block size " +
                        std::to_string(s.block) + " of scheme " + s.name + " (allowed: multiples of " +
                        std::to_string(s.block) + ", e.g. 64, 128, 256)");
  }
}

// Does element (any token, channel c) of a `role` tensor share a scale with one of
// the outlier channels?
inline bool shares_scale_with(const scheme_spec& s, kv_role role, std::size_t c, std::size_t head_dim,
                              const std::vector<std::size_t>& outlier_channels) {
  switch (s.grouping(role)) {
    case scale_grouping::none: return false;
    case scale_grouping::tensor: return true;
    case scale_grouping::channel: return false;
    case scale_grouping::row_blocks: {
      const std::size_t B = row_block(s, head_dim);
      for (auto o : outlier_channels)
        if (o / B == c / B && o != c) return true;
      return false;
    }
  }
  return false;
}

}  // namespace kvq::study
