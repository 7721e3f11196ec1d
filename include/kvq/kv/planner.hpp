/// \file
/// kvq/kv/planner.hpp — KV memory planner: bytes per token and per sequence for a model
/// shape under each storage format, PagedAttention page rounding, and the longest
/// context or largest batch that fits a memory budget.
///
/// Counting: kv::stored_bytes (store.hpp), the bytes the kv stores hold, plus one fp32
/// tensor value per layer and K/V where the recipe has one. KIVI's full-precision window
/// is counted in its compute dtype (fp32 for kivi_int*, fp16 for kivi_int*_fp16).
/// Formats are given as a kv_format or as a registry scheme (kv::named_format); errors
/// name the scheme as the caller named it.
/// A vector is one KV head's key or value for one token (MHA/GQA: 2 * kv_heads vectors
/// per token per layer); for multi-head latent attention it is the cached latent plus the
/// decoupled RoPE key (kv_lora_rank + qk_rope_head_dim values, one vector per token per
/// layer, no separate V), which is what vLLM's MLA cache stores.
/// Page rounding: a sequence of n tokens occupies ceil(n / page_tokens) pages.
/// Compacted caches (KV compaction, kvq/compact/): n tokens compacted R times keep
/// floor(n / R) tokens (at least one; R in [1, n), the rule of
/// kvq::compact::budget_from_ratio), each stored in the format as above (paged as above),
/// plus one score bias per kept token per KV head per layer (Attention Matching's beta:
/// 4 bytes fp32, 2 bytes bf16; none for eviction), outside the pages.
/// Shapes no cache can hold (head_dim not a multiple of a format's block or group size, a
/// KIVI residual that is not a multiple of the group) raise std::invalid_argument.
#pragma once

#include <cstddef>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>

#include <kvq/kv/cache.hpp>
#include <kvq/kv/registry.hpp>
#include <kvq/kv/store.hpp>

namespace kvq {
namespace kv {

/// The shape of a model as far as its KV cache is concerned.
struct model_shape {
  /// Display name.
  const char* name = "";
  /// Transformer layers, each with its own KV cache.
  std::size_t layers = 0;
  std::size_t kv_heads = 0;   ///< 0 for MLA
  std::size_t head_dim = 0;   ///< per KV head; for MLA: kv_lora_rank + qk_rope_head_dim
  bool mla = false;           ///< one latent vector per token per layer instead of K and V heads
  /// Where the numbers come from (the model's config.json).
  const char* source = "";

  /// Cached vectors per token per layer: 1 for MLA, else 2 * kv_heads (one key and one
  /// value per KV head); each has head_dim values.
  std::size_t vectors_per_layer() const noexcept { return mla ? 1u : 2u * kv_heads; }
};

/// Shapes of published models, taken from their config.json.
namespace presets {
/// meta-llama/Llama-3.1-8B config.json: num_hidden_layers 32, num_attention_heads 32,
/// num_key_value_heads 8, hidden_size 4096 (head_dim 128).
inline constexpr model_shape llama31_8b{"Llama-3.1-8B", 32, 8, 128, false,
                                        "meta-llama/Llama-3.1-8B config.json"};
/// meta-llama/Llama-3.1-70B config.json: num_hidden_layers 80, num_attention_heads 64,
/// num_key_value_heads 8, hidden_size 8192 (head_dim 128).
inline constexpr model_shape llama31_70b{"Llama-3.1-70B", 80, 8, 128, false,
                                         "meta-llama/Llama-3.1-70B config.json"};
/// Qwen/Qwen2.5-7B-Instruct config.json: num_hidden_layers 28, num_attention_heads 28,
/// num_key_value_heads 4, hidden_size 3584 (head_dim 128).
inline constexpr model_shape qwen25_7b{"Qwen2.5-7B", 28, 4, 128, false, "Qwen/Qwen2.5-7B-Instruct config.json"};
/// deepseek-ai/DeepSeek-V3 config.json: num_hidden_layers 61, kv_lora_rank 512,
/// qk_rope_head_dim 64: MLA caches 512 + 64 values per token per layer.
inline constexpr model_shape deepseek_v3{"DeepSeek-V3 (MLA)", 61, 0, 576, true, "deepseek-ai/DeepSeek-V3 config.json"};
}  // namespace presets

/// A storage format and the name errors call it: a kv_format (named by format_name) or a
/// registry scheme (named as the user wrote it, e.g. fp8_e4m3_cal).
struct named_format {
  kv_format format;  ///< the storage format
  std::string name;  ///< its name in error messages
  /// A format under its own name.
  template <class F, class = std::enable_if_t<std::is_convertible<const F&, kv_format>::value>>
  named_format(const F& f) : format(f), name(format_name(format)) {}  // NOLINT: implicit on purpose
  /// A registry scheme under its canonical name (throws for a scheme without a format).
  named_format(const scheme& s) : format(format_of(s)), name(s.name) {}  // NOLINT: implicit on purpose
};

namespace detail {
inline std::size_t ceil_div(std::size_t a, std::size_t b) { return a / b + (a % b != 0 ? 1 : 0); }
// Every byte count of the planner goes through these: a context or model too large for
// std::size_t is an error naming the product, not a wrapped small number.
inline std::size_t mul(std::size_t a, std::size_t b) { return kvq::detail::checked_mul(a, b, "kvq::kv planner: KV bytes"); }
inline std::size_t add(std::size_t a, std::size_t b) { return kvq::detail::checked_add(a, b, "kvq::kv planner: KV bytes"); }

/// Bytes of n vectors of length d in format f (one head, one of K/V), plus the format's
/// tensor value if `count_tensor`.
inline std::size_t vector_bytes(const named_format& f, kv_role role, std::size_t d, std::size_t n, bool count_tensor,
                                kivi_options kivi) {
  return add(stored_bytes(f.format, role, d, n, kivi, f.name),
             (count_tensor && has_tensor_value(f.format)) ? sizeof(float) : 0u);
}
}  // namespace detail

/// Exact KV bytes of one sequence of `tokens` tokens with keys in format k and values in
/// format v (v ignored for MLA), pages of `page_tokens` tokens (0: no paging).
inline std::size_t kv_bytes(const model_shape& m, const named_format& k, const named_format& v, std::size_t tokens,
                            std::size_t page_tokens = 0, kivi_options kivi = {}) {
  const std::size_t n = page_tokens ? detail::mul(detail::ceil_div(tokens, page_tokens), page_tokens) : tokens;
  std::size_t per_layer = 0;
  const bool tv = n > 0;  // tensor values exist once a token is stored
  if (m.mla) {
    per_layer = detail::vector_bytes(k, kv_role::key, m.head_dim, n, tv, kivi);
  } else {
    // per-layer tensor values: one for K and one for V, shared by the heads
    per_layer = detail::add(detail::mul(m.kv_heads, detail::add(detail::vector_bytes(k, kv_role::key, m.head_dim, n, false, kivi),
                                                                detail::vector_bytes(v, kv_role::value, m.head_dim, n, false, kivi))),
                            detail::vector_bytes(k, kv_role::key, m.head_dim, 0, tv, kivi) +
                                detail::vector_bytes(v, kv_role::value, m.head_dim, 0, tv, kivi));
  }
  return detail::mul(m.layers, per_layer);
}
/// kv_bytes with the same format for keys and values.
inline std::size_t kv_bytes(const model_shape& m, const named_format& f, std::size_t tokens, std::size_t page_tokens = 0,
                            kivi_options kivi = {}) {
  return kv_bytes(m, f, f, tokens, page_tokens, kivi);
}

/// Asymptotic bytes per token (scale overhead included; fixed tensor values and
/// full-precision residuals excluded), for comparing formats.
inline double bytes_per_token(const model_shape& m, const named_format& k, const named_format& v, kivi_options kivi = {}) {
  const std::size_t big = 1u << 20;  // a multiple of every group and residual length
  const double a = static_cast<double>(kv_bytes(m, k, v, 2 * big, 0, kivi));
  const double b = static_cast<double>(kv_bytes(m, k, v, big, 0, kivi));
  return (a - b) / static_cast<double>(big);
}
/// bytes_per_token with the same format for keys and values (default KIVI options).
inline double bytes_per_token(const model_shape& m, const named_format& f) { return bytes_per_token(m, f, f); }

/// KV bytes of a sequence under a mixed-precision policy (prefill formats; no paging):
/// sinks, flagged spans and the recent window at policy.high, the rest in low_k/low_v.
inline std::size_t policy_bytes(const model_shape& m, const precision_policy& p, std::size_t tokens) {
  std::size_t keep = 0;
  if (p.keep_spans.empty()) {
    keep = p.sink_tokens < tokens ? p.sink_tokens : tokens;  // O(1): sinks only
  } else {
    for (std::size_t t = 0; t < tokens; ++t) {
      bool k = t < p.sink_tokens;
      for (const auto& s : p.keep_spans) k = k || (t >= s.begin && t < s.end);
      keep += k ? 1 : 0;
    }
  }
  const std::size_t rest = tokens - keep;
  const std::size_t window = rest < p.recent_window ? rest : p.recent_window;
  const std::size_t high = keep + window, low = rest - window;
  return detail::add(kv_bytes(m, p.high, p.high, high, 0, p.kivi), kv_bytes(m, p.low_k, p.low_v, low, 0, p.kivi));
}

/// The longest context max_context() searches (2^40 tokens): a budget that holds more
/// reports this length, not a longer one.
inline constexpr std::size_t max_context_search_limit = std::size_t(1) << 40;

namespace detail {
/// Largest n in [0, 2^40] with bytes(n) * batch <= budget (bytes is non-decreasing).
template <class Bytes>
std::size_t longest_fitting(Bytes bytes, std::size_t budget_bytes, std::size_t batch, const char* who) {
  if (batch == 0) throw std::invalid_argument(std::string(who) + ": batch is 0");
  if (!(bytes(0) <= budget_bytes / batch)) return 0;  // shape errors throw here
  // A length whose byte count overflows std::size_t does not fit any budget.
  auto fits = [&](std::size_t n) {
    try {
      return bytes(n) <= budget_bytes / batch;
    } catch (const std::invalid_argument&) {
      return false;
    }
  };
  std::size_t lo = 0, hi = 1;
  while (fits(hi) && hi < max_context_search_limit) lo = hi, hi *= 2;
  if (fits(hi)) return hi;
  while (hi - lo > 1) {
    const std::size_t mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}
}  // namespace detail

/// Longest context (tokens) whose KV cache for `batch` sequences fits in budget_bytes.
inline std::size_t max_context(const model_shape& m, const named_format& k, const named_format& v, std::size_t budget_bytes,
                               std::size_t batch = 1, std::size_t page_tokens = 0, kivi_options kivi = {}) {
  return detail::longest_fitting([&](std::size_t n) { return kv_bytes(m, k, v, n, page_tokens, kivi); },
                                 budget_bytes, batch, "kvq::kv::max_context");
}
/// The same under a mixed-precision policy (policy_bytes: no paging).
inline std::size_t max_context(const model_shape& m, const precision_policy& p, std::size_t budget_bytes,
                               std::size_t batch = 1) {
  return detail::longest_fitting([&](std::size_t n) { return policy_bytes(m, p, n); }, budget_bytes, batch,
                                 "kvq::kv::max_context");
}

/// How a compacted cache stores its per-key score biases: none (eviction keeps no
/// biases), fp32 (4 bytes each) or bf16 (2 bytes each).
enum class bias_dtype { none, fp32, bf16 };
/// Bytes of one stored bias: 4 for fp32, 2 for bf16, 0 for none.
inline std::size_t bias_bytes(bias_dtype b) { return b == bias_dtype::fp32 ? 4 : b == bias_dtype::bf16 ? 2 : 0; }

/// Tokens kept when `tokens` tokens are compacted `ratio` times: floor(tokens / ratio),
/// at least one; ratio must lie in [1, tokens) (std::invalid_argument otherwise).
inline std::size_t compacted_tokens(std::size_t tokens, double ratio) {
  const char* who = "kvq::kv::compacted_tokens";
  if (tokens < 2) throw std::invalid_argument(std::string(who) + ": compaction needs a context of at least 2 tokens");
  if (!(ratio >= 1.0))
    throw std::invalid_argument(std::string(who) + ": compaction ratio must be >= 1 (got " + std::to_string(ratio) + ")");
  if (!(ratio < static_cast<double>(tokens)))
    throw std::invalid_argument(std::string(who) + ": compaction ratio must be < the context of " +
                                std::to_string(tokens) + " tokens");
  const double kept = std::floor(static_cast<double>(tokens) / ratio);
  return kept < 1.0 ? 1u : static_cast<std::size_t>(kept);
}

/// KV bytes of one sequence of `tokens` tokens compacted `ratio` times: the kept tokens
/// in k/v (kv_bytes, paged) plus `bias` bytes per kept token per KV head per layer.
/// MLA caches are rejected: the biases belong to KV heads.
inline std::size_t compacted_kv_bytes(const model_shape& m, const named_format& k, const named_format& v, std::size_t tokens,
                                      double ratio, bias_dtype bias, std::size_t page_tokens = 0,
                                      kivi_options kivi = {}) {
  if (m.mla)
    throw std::invalid_argument("kvq::kv::compacted_kv_bytes: compaction biases are per KV head; an MLA cache has none");
  const std::size_t kept = compacted_tokens(tokens, ratio);
  const std::size_t biases = detail::mul(detail::mul(detail::mul(kept, m.layers), m.kv_heads), bias_bytes(bias));
  return detail::add(kv_bytes(m, k, v, kept, page_tokens, kivi), biases);
}

/// Largest number of sequences of `tokens` tokens whose KV caches fit in budget_bytes.
inline std::size_t max_batch(const model_shape& m, const named_format& k, const named_format& v, std::size_t tokens,
                             std::size_t budget_bytes, std::size_t page_tokens = 0, kivi_options kivi = {}) {
  const std::size_t per = kv_bytes(m, k, v, tokens, page_tokens, kivi);
  return per == 0 ? 0 : budget_bytes / per;
}

}  // namespace kv
}  // namespace kvq
