/// \file
/// kvq/kv/cache.hpp — quantized KV caches with mixed-precision policies.
///
/// layer_cache holds one layer's keys and values for every KV head. Each token is stored
/// in one of four places, decided by the layer's precision_policy:
/// ~~~
///   keep    the first `sink_tokens` tokens and caller-flagged spans (e.g. the tokens of
///           an article or case number in a legal prompt), kept at `high` precision for good;
///   window  the most recent `recent_window` tokens, at `high` precision; a token leaving
///           the window is quantized from its stored high-precision values (as KIVI
///           quantizes its fp16 residual);
///   low     every other token, in the low-precision format of the phase in which it
///           arrived (`low_k`/`low_v` for prefill, `decode_low_k`/`decode_low_v` if set
///           for decode — the per-phase choice).
/// ~~~
/// The policy is per layer (kv_cache takes one per layer). Tensor-level values of the
/// low formats (TE amax, vLLM k_scale/v_scale, torchao per_tensor_scale) are given in the
/// policy or calibrated once from the first rows that reach the store — over all heads
/// (tensor_scope::per_layer, as vLLM's per-layer k_scale) or per head — and then frozen.
/// Appending a prefill chunk or the same tokens one at a time gives identical stores,
/// except that calibration sees the first chunk.
/// memory_bytes() counts every byte held for K and V: codes, scales, zero points,
/// high-precision rows and the tensor values (4 bytes each).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <kvq/block.hpp>
#include <kvq/kv/store.hpp>
#include <kvq/kv/tensor.hpp>

namespace kvq {
namespace kv {

/// Token positions [begin, end).
struct token_span {
  /// \var end
  /// One past the last position.

  /// First position.
  std::size_t begin = 0, end = 0;
};

/// When a token was appended: in a prefill chunk or as a decode step (selects the low
/// format, see precision_policy::decode_low_k).
enum class phase : unsigned char { prefill, decode };
/// What a calibrated tensor value covers: all KV heads of the layer (vLLM's per-layer
/// k_scale / v_scale) or each head separately.
enum class tensor_scope : unsigned char { per_layer, per_head };

/// How one layer stores its tokens: which tokens stay at high precision (sinks, flagged
/// spans, the recent window), the low-precision formats per role and phase, and the
/// tensor values of those formats (given, or calibrated once and frozen).
struct precision_policy {
  /// Low-precision format of keys appended in prefill (and in decode unless decode_low_k).
  kv_format low_k = block::nvfp4_te{};
  /// Low-precision format of values appended in prefill (and in decode unless decode_low_v).
  kv_format low_v = block::nvfp4_te{};
  /// \var decode_low_v
  /// Format of values appended in decode; low_v if empty.

  /// Format of keys appended in decode; low_k if empty.
  std::optional<kv_format> decode_low_k, decode_low_v;  ///< formats for tokens appended in decode
  hp_format high = hp_format::bf16;                     ///< sinks, flagged spans, recent window
  /// The first sink_tokens tokens stay at `high` precision for good.
  std::size_t sink_tokens = 0;
  /// The most recent recent_window tokens are held at `high` precision; a token leaving the
  /// window is quantized from its stored high-precision values.
  std::size_t recent_window = 0;
  /// Token spans kept at `high` precision for good (also added by layer_cache::flag_span).
  std::vector<token_span> keep_spans;
  /// What a calibrated tensor value covers.
  tensor_scope scope = tensor_scope::per_layer;
  /// \var v_tensor_value
  /// Tensor value of the value format; calibrated from the first rows and frozen if empty.

  /// Tensor value of the key format (TE amax, vLLM k_scale, torchao per_tensor_scale); calibrated
  /// from the first rows that reach the store and frozen if empty.
  std::optional<float> k_tensor_value, v_tensor_value;  ///< given; else calibrated and frozen
  /// KIVI settings of KIVI formats: the residual length (the group size comes from the scheme).
  kivi_options kivi;

  /// Every token in format f (K and V), nothing kept at high precision.
  static precision_policy uniform(kv_format f) {
    precision_policy p;
    p.low_k = f;
    p.low_v = f;
    return p;
  }
};

/// Where a token's K/V rows are stored.
enum class token_class : unsigned char { sink_or_span, window, low_prefill, low_decode };

/// Bytes held for K and V of a layer or a whole cache, by kind, and tokens per class.
struct memory_report {
  std::size_t high_bytes = 0;    ///< keep + window rows
  std::size_t low_bytes = 0;     ///< codes, scales, zero points (and KIVI residuals)
  std::size_t tensor_bytes = 0;  ///< frozen tensor values
  /// \var low_tokens
  /// Tokens stored in a low-precision format (token_class::low_prefill, low_decode).

  /// Tokens held at high precision (sinks, flagged spans, recent window).
  std::size_t high_tokens = 0, low_tokens = 0;
  /// high_bytes + low_bytes + tensor_bytes.
  std::size_t total() const noexcept { return high_bytes + low_bytes + tensor_bytes; }
};

namespace detail {
/// Rows at a high-precision format, with removal from the front (the recent window).
class hp_rows {
 public:
  hp_rows(hp_format f, std::size_t hd) : f_(f), hd_(hd) {}
  void push(const float* r, std::size_t n) {
    for (std::size_t i = 0; i < n * hd_; ++i) {
      if (f_ == hp_format::fp32) f32_.push_back(r[i]);
      else h_.push_back(f_ == hp_format::bf16 ? float_to_bf16_rn(r[i]) : float_to_fp16_rn(r[i]));
    }
  }
  float at(std::size_t i) const {
    return f_ == hp_format::fp32 ? f32_[i] : f_ == hp_format::bf16 ? bf16_to_float(h_[i]) : fp16_to_float(h_[i]);
  }
  void pop_front(std::size_t n, float* out) {
    for (std::size_t i = 0; i < n * hd_; ++i) out[i] = at(i);
    const auto k = static_cast<std::ptrdiff_t>(n * hd_);
    if (f_ == hp_format::fp32) f32_.erase(f32_.begin(), f32_.begin() + k);
    else h_.erase(h_.begin(), h_.begin() + k);
  }
  std::size_t rows() const noexcept { return (f_ == hp_format::fp32 ? f32_.size() : h_.size()) / hd_; }
  std::size_t bytes() const noexcept { return f32_.size() * 4u + h_.size() * 2u; }

 private:
  hp_format f_;
  std::size_t hd_;
  std::vector<float> f32_;
  std::vector<std::uint16_t> h_;
};
}  // namespace detail

/// One layer's keys and values for every KV head, each token stored as its
/// precision_policy decides (see the file comment): kept, windowed or low precision.
class layer_cache {
 public:
  /// An empty cache. Throws std::invalid_argument for zero heads or head_dim, or when a low
  /// format cannot store rows of head_dim (checked now, not at the first append).
  layer_cache(std::size_t num_kv_heads, std::size_t head_dim, precision_policy policy)
      : nh_(num_kv_heads), hd_(head_dim), p_(std::move(policy)) {
    if (nh_ == 0 || hd_ == 0)
      throw std::invalid_argument("kvq::kv::layer_cache: " + std::to_string(nh_) + " KV heads of dimension " +
                                  std::to_string(hd_));
    for (std::size_t r = 0; r < 2; ++r) {
      for (std::size_t h = 0; h < nh_; ++h) {
        keep_[r].emplace_back(p_.high, hd_);
        window_[r].emplace_back(p_.high, hd_);
      }
      for (std::size_t ph = 0; ph < 2; ++ph) {
        (void)make_row_store(low_format(static_cast<kv_role>(r), static_cast<phase>(ph)), static_cast<kv_role>(r), hd_,
                             1.0f, p_.kivi);  // validates block sizes now, not at the first append
        low_[r][ph].resize(nh_);
      }
    }
  }

  /// Number of KV heads.
  std::size_t num_kv_heads() const noexcept { return nh_; }
  /// Width of a K/V row.
  std::size_t head_dim() const noexcept { return hd_; }
  /// Tokens appended so far.
  std::size_t tokens() const noexcept { return slots_.size(); }
  /// The policy (with the spans added by flag_span).
  const precision_policy& policy() const noexcept { return p_; }

  /// Flag a span of token positions to keep at high precision (tokens not yet appended).
  void flag_span(token_span s) {
    if (s.begin < slots_.size())
      throw std::invalid_argument("kvq::kv::layer_cache::flag_span: span starts at token " + std::to_string(s.begin) +
                                  " but " + std::to_string(slots_.size()) + " tokens are already stored");
    p_.keep_spans.push_back(s);
  }

  /// Append the same n new tokens of K and V for every head (a prefill chunk or one decode token).
  void append(const kv_heads& k, const kv_heads& v, phase ph = phase::prefill) {
    k.check_shape("kvq::kv::layer_cache::append (keys)", nh_, hd_);
    v.check_shape("kvq::kv::layer_cache::append (values)", nh_, hd_);
    if (k.tokens() != v.tokens())
      throw std::invalid_argument("kvq::kv::layer_cache::append: " + std::to_string(k.tokens()) + " key tokens but " +
                                  std::to_string(v.tokens()) + " value tokens");
    const std::size_t n = k.tokens();
    // Classify the new tokens; collect rows bound for the low stores by phase.
    std::vector<std::size_t> to_low[2];  // token positions, in order
    for (std::size_t i = 0; i < n; ++i) {
      const std::size_t t = slots_.size();
      if (t < p_.sink_tokens || in_span(t)) {
        slots_.push_back({token_class::sink_or_span, keep_rows_++});
        for (std::size_t r = 0; r < 2; ++r)
          for (std::size_t h = 0; h < nh_; ++h) keep_[r][h].push(row_ptr(r == 0 ? k : v, h, i), 1);
      } else if (p_.recent_window > 0) {
        slots_.push_back({token_class::window, 0});
        window_tokens_.push_back({t, ph});
        for (std::size_t r = 0; r < 2; ++r)
          for (std::size_t h = 0; h < nh_; ++h) window_[r][h].push(row_ptr(r == 0 ? k : v, h, i), 1);
      } else {
        slots_.push_back({ph == phase::prefill ? token_class::low_prefill : token_class::low_decode, 0});
        to_low[static_cast<int>(ph)].push_back(t);
        pending_[static_cast<int>(ph)].push_back(i);
      }
    }
    // Rows that left the window (oldest first) go to their phase's low store.
    std::vector<std::pair<std::size_t, phase>> aged;
    while (window_tokens_.size() > p_.recent_window) {
      aged.push_back(window_tokens_.front());
      window_tokens_.erase(window_tokens_.begin());
    }
    std::vector<float> aged_rows[2][2];  // [role][phase] rows of every head, head-major
    if (!aged.empty()) {
      for (std::size_t r = 0; r < 2; ++r)
        for (std::size_t h = 0; h < nh_; ++h) {
          std::vector<float> tmp(aged.size() * hd_);
          window_[r][h].pop_front(aged.size(), tmp.data());
          for (std::size_t a = 0; a < aged.size(); ++a) {
            auto& dst = aged_rows[r][static_cast<int>(aged[a].second)];
            dst.insert(dst.end(), tmp.begin() + static_cast<std::ptrdiff_t>(a * hd_),
                       tmp.begin() + static_cast<std::ptrdiff_t>((a + 1) * hd_));
          }
        }
    }
    for (int ph2 = 0; ph2 < 2; ++ph2) {
      // Aged window tokens are older than this call's direct low tokens: append them first.
      std::vector<std::size_t> aged_pos;
      for (const auto& a : aged)
        if (static_cast<int>(a.second) == ph2) aged_pos.push_back(a.first);
      const std::size_t na = aged_pos.size(), nd = pending_[ph2].size();
      if (na + nd == 0) continue;
      for (std::size_t r = 0; r < 2; ++r) {
        std::vector<std::vector<float>> rows(nh_);
        for (std::size_t h = 0; h < nh_; ++h) {
          rows[h].reserve((na + nd) * hd_);
          // aged_rows[r][ph2] is head-major: rows of head h are a contiguous run of na rows
          const std::size_t off = h * na * hd_;
          rows[h].insert(rows[h].end(), aged_rows[r][ph2].begin() + static_cast<std::ptrdiff_t>(off),
                         aged_rows[r][ph2].begin() + static_cast<std::ptrdiff_t>(off + na * hd_));
          const kv_heads& src = r == 0 ? k : v;
          for (std::size_t i : pending_[ph2]) rows[h].insert(rows[h].end(), row_ptr(src, h, i), row_ptr(src, h, i) + hd_);
        }
        append_low(r, static_cast<phase>(ph2), rows, na + nd);
      }
      std::size_t row = low_rows_[ph2];
      for (std::size_t t : aged_pos) slots_[t] = {ph2 == 0 ? token_class::low_prefill : token_class::low_decode, row++};
      for (std::size_t t : to_low[ph2]) slots_[t].row = row++;
      low_rows_[ph2] = row;
      pending_[ph2].clear();
    }
    // Window tokens still in the window: their row is their position in the window.
    for (std::size_t w = 0; w < window_tokens_.size(); ++w) slots_[window_tokens_[w].first].row = w;
  }

  /// Dequantized keys / values of one KV head (tokens x head_dim).
  matrix_f keys(std::size_t head) const { return gather(0, head); }
  /// Dequantized values of one KV head (tokens x head_dim). Throws std::invalid_argument for
  /// a head out of range.
  matrix_f values(std::size_t head) const { return gather(1, head); }
  /// Dequantized keys of every KV head.
  kv_heads keys() const { return all(0); }
  /// Dequantized values of every KV head.
  kv_heads values() const { return all(1); }

  /// Where the given token is stored now. Throws std::invalid_argument for a token not appended.
  token_class class_of(std::size_t token) const {
    if (token >= slots_.size())
      throw std::invalid_argument("kvq::kv::layer_cache::class_of: token " + std::to_string(token) + " of " +
                                  std::to_string(slots_.size()));
    return slots_[token].cls;
  }

  /// Bytes held by this layer (codes, scales, zero points, high-precision rows, tensor
  /// values at 4 bytes each) and tokens per class.
  memory_report report() const {
    memory_report m;
    for (std::size_t r = 0; r < 2; ++r) {
      for (std::size_t h = 0; h < nh_; ++h) m.high_bytes += keep_[r][h].bytes() + window_[r][h].bytes();
      for (std::size_t ph = 0; ph < 2; ++ph) {
        for (std::size_t h = 0; h < nh_; ++h)
          if (low_[r][ph][h]) m.low_bytes += low_[r][ph][h]->memory_bytes();
        if (tensor_set_[r][ph] && has_tensor_value(low_format(static_cast<kv_role>(r), static_cast<phase>(ph))))
          m.tensor_bytes += sizeof(float) * (p_.scope == tensor_scope::per_layer ? 1u : nh_);
      }
    }
    for (const auto& s : slots_) (s.cls == token_class::sink_or_span || s.cls == token_class::window ? m.high_tokens : m.low_tokens)++;
    return m;
  }
  /// Every byte held for K and V: report().total().
  std::size_t memory_bytes() const { return report().total(); }

 private:
  struct slot {
    token_class cls;
    std::size_t row;
  };

  const kv_format& low_format(kv_role r, phase ph) const {
    if (ph == phase::decode) {
      const auto& d = r == kv_role::key ? p_.decode_low_k : p_.decode_low_v;
      if (d) return *d;
    }
    return r == kv_role::key ? p_.low_k : p_.low_v;
  }
  bool in_span(std::size_t t) const {
    for (const auto& s : p_.keep_spans)
      if (t >= s.begin && t < s.end) return true;
    return false;
  }
  static const float* row_ptr(const kv_heads& x, std::size_t h, std::size_t i) {
    return x[h].data() + i * static_cast<std::size_t>(x[h].cols());
  }

  void append_low(std::size_t r, phase ph, const std::vector<std::vector<float>>& rows, std::size_t n) {
    const int p = static_cast<int>(ph);
    const kv_role role = static_cast<kv_role>(r);
    const kv_format& f = low_format(role, ph);
    if (!tensor_set_[r][p]) {
      const std::optional<float>& given = role == kv_role::key ? p_.k_tensor_value : p_.v_tensor_value;
      const block::amax_nan rule = tensor_amax_rule(f);
      std::vector<float> amax(nh_);
      for (std::size_t h = 0; h < nh_; ++h) amax[h] = block::tensor_amax(rows[h].data(), n * hd_, rule);
      float layer_amax = 0.0f;
      if (p_.scope == tensor_scope::per_layer) {
        std::vector<float> all;
        for (std::size_t h = 0; h < nh_; ++h) all.push_back(amax[h]);
        layer_amax = block::tensor_amax(all.data(), all.size(), rule);
      }
      for (std::size_t h = 0; h < nh_; ++h) {
        const float a = p_.scope == tensor_scope::per_layer ? layer_amax : amax[h];
        const float tv = given ? *given : calibrated_tensor_value(f, a, role);
        low_[r][p][h] = make_row_store(f, role, hd_, tv, p_.kivi);
      }
      tensor_set_[r][p] = true;
    }
    for (std::size_t h = 0; h < nh_; ++h) low_[r][p][h]->append(rows[h].data(), n);
  }

  matrix_f gather(std::size_t r, std::size_t head) const {
    if (head >= nh_)
      throw std::invalid_argument("kvq::kv::layer_cache: head " + std::to_string(head) + " of " + std::to_string(nh_));
    matrix_f out(static_cast<Eigen::Index>(slots_.size()), static_cast<Eigen::Index>(hd_));
    std::vector<float> low[2];
    for (std::size_t ph = 0; ph < 2; ++ph)
      if (low_[r][ph][head]) {
        low[ph].resize(low_[r][ph][head]->rows() * hd_);
        low_[r][ph][head]->dequantize(low[ph].data());
      }
    for (std::size_t t = 0; t < slots_.size(); ++t) {
      const slot& s = slots_[t];
      float* dst = out.data() + t * hd_;
      for (std::size_t c = 0; c < hd_; ++c) {
        switch (s.cls) {
          case token_class::sink_or_span: dst[c] = keep_[r][head].at(s.row * hd_ + c); break;
          case token_class::window: dst[c] = window_[r][head].at(s.row * hd_ + c); break;
          case token_class::low_prefill: dst[c] = low[0][s.row * hd_ + c]; break;
          case token_class::low_decode: dst[c] = low[1][s.row * hd_ + c]; break;
        }
      }
    }
    return out;
  }
  kv_heads all(std::size_t r) const {
    kv_heads out;
    for (std::size_t h = 0; h < nh_; ++h) out.heads.push_back(gather(r, h));
    return out;
  }

  std::size_t nh_, hd_;
  precision_policy p_;
  std::vector<slot> slots_;
  std::size_t keep_rows_ = 0, low_rows_[2] = {0, 0};
  std::vector<std::pair<std::size_t, phase>> window_tokens_;  // (token position, arrival phase), oldest first
  std::vector<std::size_t> pending_[2];
  std::vector<detail::hp_rows> keep_[2], window_[2];       // [role][head]
  std::vector<std::unique_ptr<row_store>> low_[2][2];      // [role][phase][head]
  bool tensor_set_[2][2] = {{false, false}, {false, false}};
};

/// A whole model's KV cache: one layer_cache per layer, each with its own policy.
class kv_cache {
 public:
  /// `layers` layers with the same policy. Throws as the other constructor.
  kv_cache(std::size_t layers, std::size_t num_kv_heads, std::size_t head_dim, const precision_policy& policy)
      : kv_cache(std::vector<precision_policy>(layers, policy), num_kv_heads, head_dim) {}
  /// One layer per policy. Throws std::invalid_argument for no layers, and as layer_cache's
  /// constructor.
  kv_cache(const std::vector<precision_policy>& per_layer, std::size_t num_kv_heads, std::size_t head_dim) {
    if (per_layer.empty()) throw std::invalid_argument("kvq::kv::kv_cache: no layers");
    for (const auto& p : per_layer) layers_.emplace_back(num_kv_heads, head_dim, p);
  }
  /// Number of layers.
  std::size_t layers() const noexcept { return layers_.size(); }
  /// Layer l. Throws std::invalid_argument for l out of range.
  layer_cache& layer(std::size_t l) {
    check(l);
    return layers_[l];
  }
  /// Layer l. Throws std::invalid_argument for l out of range.
  const layer_cache& layer(std::size_t l) const {
    check(l);
    return layers_[l];
  }
  /// Sum of the layers' reports.
  memory_report report() const {
    memory_report m;
    for (const auto& l : layers_) {
      const memory_report r = l.report();
      m.high_bytes += r.high_bytes;
      m.low_bytes += r.low_bytes;
      m.tensor_bytes += r.tensor_bytes;
      m.high_tokens += r.high_tokens;
      m.low_tokens += r.low_tokens;
    }
    return m;
  }
  /// Every byte held for K and V over all layers.
  std::size_t memory_bytes() const { return report().total(); }

 private:
  void check(std::size_t l) const {
    if (l >= layers_.size())
      throw std::invalid_argument("kvq::kv::kv_cache: layer " + std::to_string(l) + " of " + std::to_string(layers_.size()));
  }
  std::vector<layer_cache> layers_;
};

}  // namespace kv
}  // namespace kvq
