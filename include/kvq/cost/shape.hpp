/// \file
/// kvq/cost/shape.hpp — transformer shapes for the prefill cost model: attention heads,
/// head dimension, and the linear layers whose FLOPs and weight bytes prefill pays.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvq {
namespace cost {

/// A decoder-only transformer with grouped-query attention and a SwiGLU MLP (three
/// matrices), dense or mixture-of-experts.
struct model_shape {
  std::string key;            ///< command-line name
  std::size_t layers = 0;     ///< transformer layers, each with attention and a KV cache
  std::size_t q_heads = 0;    ///< query heads
  std::size_t kv_heads = 0;   ///< key/value heads (GQA groups)
  std::size_t head_dim = 0;   ///< values per head
  std::size_t hidden = 0;     ///< model width
  std::size_t mlp = 0;        ///< dense MLP width (0 for an MoE layer)
  std::size_t vocab = 0;      ///< vocabulary (the LM head runs for the last token only)
  std::size_t experts = 0;    ///< routed experts per layer (0 = dense)
  std::size_t experts_topk = 0;    ///< routed experts per token
  std::size_t shared_experts = 0;  ///< experts every token passes through
  std::size_t expert_mlp = 0;      ///< width of one expert's MLP
  std::string source;              ///< where the shape comes from

  /// Weights of one layer's attention projections (Q, K, V, O).
  double attn_params() const {
    return static_cast<double>(hidden) * static_cast<double>(head_dim) *
           static_cast<double>(2 * q_heads + 2 * kv_heads);
  }
  /// Weights of one layer's MLP a token passes through.
  double mlp_params_active() const {
    return 3.0 * static_cast<double>(hidden) *
           static_cast<double>(experts ? (experts_topk + shared_experts) * expert_mlp : mlp);
  }
  /// Weights of one layer's MLP stored (every expert; a long prefill touches them all).
  double mlp_params_stored() const {
    return 3.0 * static_cast<double>(hidden) *
           static_cast<double>(experts ? (experts + shared_experts) * expert_mlp : mlp);
  }
  /// Throws std::invalid_argument unless the shape is usable.
  void check() const {
    if (layers == 0 || q_heads == 0 || kv_heads == 0 || head_dim == 0 || hidden == 0 || vocab == 0)
      throw std::invalid_argument("model shape '" + key + "': layers, q_heads, kv_heads, head_dim, hidden, vocab must be > 0");
    if (q_heads % kv_heads != 0)
      throw std::invalid_argument("model shape '" + key + "': q_heads is not a multiple of kv_heads");
    if (experts == 0 && mlp == 0) throw std::invalid_argument("model shape '" + key + "': mlp must be > 0 for a dense model");
    if (experts != 0 && (experts_topk == 0 || experts_topk > experts || expert_mlp == 0))
      throw std::invalid_argument("model shape '" + key + "': an MoE needs 0 < experts_topk <= experts and expert_mlp > 0");
  }
};

/// The built-in shapes.
inline const std::vector<model_shape>& shapes() {
  static const std::vector<model_shape> table = {
      {"smollm2-135m", 30, 9, 3, 64, 576, 1536, 49152, 0, 0, 0, 0,
       "HuggingFaceTB/SmolLM2-135M config.json"},
      {"llama-3.1-8b", 32, 32, 8, 128, 4096, 14336, 128256, 0, 0, 0, 0,
       "meta-llama/Llama-3.1-8B config.json"},
      {"qwen3-0.6b", 28, 16, 8, 128, 1024, 3072, 151936, 0, 0, 0, 0, "Qwen/Qwen3-0.6B config.json"},
      // Assumption: GLM-4.5-Air's attention and experts, every layer an MoE layer (the real
      // model's first layer is dense); 128 routed experts, 8 per token, plus 1 shared.
      {"glm-moe", 46, 96, 8, 128, 4096, 0, 151552, 128, 8, 1, 1408,
       "assumed after zai-org/GLM-4.5-Air config.json (46 layers, 96/8 heads x 128, 128 experts top-8 + 1 "
       "shared of width 1408), all layers MoE"},
  };
  return table;
}

/// The keys of shapes(), comma-separated.
inline std::string shape_keys() {
  std::string s;
  for (const auto& m : shapes()) s += (s.empty() ? "" : ", ") + m.key;
  return s;
}

/// The shape with this key; throws std::invalid_argument naming the allowed keys.
inline const model_shape& find_shape(const std::string& key) {
  for (const auto& m : shapes())
    if (key == m.key) return m;
  throw std::invalid_argument("unknown model '" + key + "' (allowed: " + shape_keys() + ")");
}

}  // namespace cost
}  // namespace kvq
