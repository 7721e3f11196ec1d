/// \file
/// kvq/kv/store.hpp — per-head token stores: one head's K or V rows under one format.
///
/// ~~~
///  - plain_row_store: rows kept at bf16 / fp16 / fp32 (round to nearest even).
///  - `block_row_store<S>`: rows quantized with a block scheme along head_dim (NVFP4, MX,
///    FP8 per tensor, per-token-head). Rows are independent, so appending one token at a
///    time or a prefill chunk gives the same codes; the scheme's tensor value (TE amax,
///    vLLM k_scale, torchao per_tensor_scale) is fixed when the store is made and never
///    recomputed (vLLM calibrates once and freezes; kv/cache.hpp decides the value).
///  - kivi_key_store / kivi_value_store: KIVI (models/llama_kivi.py). Keys are quantized
///    per channel in groups of `group` consecutive tokens; new keys wait at full precision
///    until `residual` of them have accumulated, then all of them are quantized (prefill:
///    the first n - n % residual tokens at once). Values are quantized per token in groups
///    of `group` channels; the most recent `residual` values stay at full precision and
///    the oldest is quantized as each new one arrives (prefill: all but the last
///    `residual`). Full precision means the compute dtype (fp16 for KIVI's models).
/// ~~~
/// memory_bytes() is exactly the bytes the store holds (codes, scales, zero points,
/// full-precision rows); a scheme's single tensor value is counted by the cache.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include <kvq/block.hpp>
#include <kvq/core/error.hpp>

namespace kvq {
namespace kv {

/// High-precision storage formats for unquantized tokens.
enum class hp_format : unsigned char { fp32, bf16, fp16 };

/// "fp32", "bf16" or "fp16".
inline constexpr const char* to_string(hp_format f) noexcept {
  return f == hp_format::fp32 ? "fp32" : f == hp_format::bf16 ? "bf16" : "fp16";
}
/// Bytes per value of f: 4 for fp32, 2 for bf16 and fp16.
inline constexpr std::size_t hp_bytes(hp_format f) noexcept { return f == hp_format::fp32 ? 4u : 2u; }

/// Which half of the cache a store holds (vLLM calibrates K with /200 and V with /100;
/// KIVI groups keys per channel and values per token).
enum class kv_role : unsigned char { key, value };

/// Every storage format a KV store can use: high precision, or one of the block recipes.
using kv_format =
    std::variant<hp_format, block::nvfp4_te, block::nvfp4_te_enc_div, block::nvfp4_vllm<>, block::nvfp4_vllm_4over6<>, block::nvfp4_torchao,
                 block::nvfp4_torchao_two_level, block::mxfp8_e4m3_floor, block::mxfp8_e5m2_floor,
                 block::mxfp6_e3m2_floor, block::mxfp6_e2m3_floor, block::mxfp4_floor, block::mxfp8_e4m3_rceil,
                 block::mxfp8_e5m2_rceil, block::mxfp6_e3m2_rceil, block::mxfp6_e2m3_rceil, block::mxfp4_rceil,
                 block::mx_rceil_torchao<fmt::e4m3>, block::mx_rceil_torchao<fmt::e5m2>,
                 block::mx_rceil_torchao<fmt::e3m2>, block::mx_rceil_torchao<fmt::e2m3>,
                 block::mx_rceil_torchao<fmt::e2m1>,
                 block::fp8_e4m3_per_tensor, block::fp8_e5m2_per_tensor, block::fp8_per_token_head,
                 block::int8_per_token_head, block::kivi_int2, block::kivi_int4, block::kivi_int8,
                 block::kivi_group_fp16<2>, block::kivi_group_fp16<4>, block::kivi_group_fp16<8>>;

/// The recipe's name (the recipe type's static `name`, unique per recipe type), or the high-precision
/// format's. Scheme names (with their tensor-value rules) live in kv/registry.hpp.
inline std::string format_name(const kv_format& f) {
  return std::visit(
      [](const auto& s) -> std::string {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same<T, hp_format>::value) return to_string(s);
        else return T::name;
      },
      f);
}

namespace detail {
template <class T>
struct is_kivi : std::false_type {};
template <int B, class C>
struct is_kivi<block::kivi_group<B, C>> : std::true_type {};
}  // namespace detail

/// Whether a format quantizes each row on its own, given the tensor value: every one but
/// KIVI, whose key groups run across tokens and whose residual window is the last tokens.
/// Such rows can go through a store in chunks with the same codes.
inline bool rows_independent(const kv_format& f) {
  return std::visit(
      [](const auto& s) {
        (void)s;
        return !detail::is_kivi<std::decay_t<decltype(s)>>::value;
      },
      f);
}

/// Whether a format has a tensor-level value, and the value vLLM-style calibration gives
/// for a first-chunk amax (fp8 per tensor: amax * fp32(1/200) for K, 1/100 for V).
inline bool has_tensor_value(const kv_format& f) {
  return std::visit(
      [](const auto& s) -> bool {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same<T, hp_format>::value) return false;
        else return T::tensor != block::tensor_kind::none;
      },
      f);
}
/// The tensor value calibration gives format f for a first-chunk amax: FP8 per tensor
/// as vLLM (block::vllm_calibrated_scale with the K or V constant), other recipes their
/// own tensor_value_from_amax; 1 for high-precision formats.
inline float calibrated_tensor_value(const kv_format& f, float amax, kv_role role) {
  return std::visit(
      [&](const auto& s) -> float {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same<T, hp_format>::value) {
          return 1.0f;
        } else if constexpr (std::is_same<T, block::fp8_e4m3_per_tensor>::value ||
                             std::is_same<T, block::fp8_e5m2_per_tensor>::value) {
          return block::vllm_calibrated_scale(amax, role == kv_role::key ? block::vllm_k_scale_constant
                                                                          : block::vllm_v_scale_constant);
        } else {
          return T::tensor_value_from_amax(amax);
        }
      },
      f);
}
/// How the amax for calibrating f treats NaN (the recipe's tensor_amax_rule; ignore for
/// high-precision formats).
inline block::amax_nan tensor_amax_rule(const kv_format& f) {
  return std::visit(
      [](const auto& s) -> block::amax_nan {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same<T, hp_format>::value) return block::amax_nan::ignore;
        else return T::tensor_amax_rule;
      },
      f);
}

// ----------------------------------------------------------------------------- stores
/// One head's K or V rows under one format: the interface of the per-head token stores.
class row_store {
 public:
  virtual ~row_store() = default;
  /// Width of a row.
  virtual std::size_t head_dim() const noexcept = 0;
  /// Rows appended so far (quantized or still at full precision).
  virtual std::size_t rows() const noexcept = 0;
  /// Append n rows (row-major, head_dim floats each).
  virtual void append(const float* rows, std::size_t n) = 0;
  /// Write all rows, oldest first, into out (rows() x head_dim floats).
  virtual void dequantize(float* out) const = 0;
  /// Bytes held (codes, scales, zero points, high-precision rows).
  virtual std::size_t memory_bytes() const noexcept = 0;
};

/// Rows kept at bf16, fp16 (round to nearest even) or fp32.
class plain_row_store final : public row_store {
 public:
  /// An empty store of rows of head_dim values in format f.
  plain_row_store(hp_format f, std::size_t head_dim) : f_(f), hd_(head_dim) {}
  std::size_t head_dim() const noexcept override { return hd_; }
  std::size_t rows() const noexcept override { return n_; }
  void append(const float* rows, std::size_t n) override {
    const std::size_t m = kvq::detail::checked_mul(n, hd_, "kvq::kv::plain_row_store::append: rows x head_dim");
    if (m > 0 && rows == nullptr) throw std::invalid_argument("kvq::kv::plain_row_store::append: rows is null");
    if (f_ == hp_format::fp32) {
      f32_.insert(f32_.end(), rows, rows + m);
    } else {
      // One loop per format over a sized array (no push_back): bf16's loop vectorises.
      const std::size_t old = h_.size();
      h_.resize(old + m);
      std::uint16_t* h = h_.data() + old;
      if (f_ == hp_format::bf16)
        for (std::size_t i = 0; i < m; ++i) h[i] = float_to_bf16_rn(rows[i]);
      else
        for (std::size_t i = 0; i < m; ++i) h[i] = float_to_fp16_rn(rows[i]);
    }
    n_ += n;
  }
  void dequantize(float* out) const override {
    const std::size_t m = n_ * hd_;
    if (f_ == hp_format::fp32) {
      std::copy(f32_.begin(), f32_.end(), out);
    } else if (f_ == hp_format::bf16) {
      for (std::size_t i = 0; i < m; ++i) out[i] = bf16_to_float(h_[i]);
    } else {
      for (std::size_t i = 0; i < m; ++i) out[i] = fp16_to_float(h_[i]);
    }
  }
  std::size_t memory_bytes() const noexcept override {
    return f32_.size() * sizeof(float) + h_.size() * sizeof(std::uint16_t);
  }

 private:
  hp_format f_;
  std::size_t hd_, n_ = 0;
  std::vector<float> f32_;
  std::vector<std::uint16_t> h_;
};

template <class S>
/// Rows quantized independently with block scheme S along head_dim (codes, block scales
/// and zero points per row), with the scheme's tensor value frozen at construction.
class block_row_store final : public row_store {
 public:
  /// The scheme's block scale type (a code byte or float).
  using scale_type = typename S::scale_type;
  /// An empty store. Throws std::invalid_argument unless head_dim is a multiple of the
  /// scheme's block size.
  block_row_store(S s, std::size_t head_dim, float tensor_value) : s_(s), hd_(head_dim), tv_(tensor_value) {
    if (s_.block_size() == 0 || hd_ % s_.block_size() != 0)
      throw std::invalid_argument(std::string("kvq::kv::block_row_store(") + S::name + "): head_dim " +
                                  std::to_string(hd_) + " is not a multiple of the block size " +
                                  std::to_string(s_.block_size()));
  }
  std::size_t head_dim() const noexcept override { return hd_; }
  std::size_t rows() const noexcept override { return n_; }
  /// The frozen tensor value.
  float tensor_value() const noexcept { return tv_; }
  /// The scheme.
  const S& scheme() const noexcept { return s_; }

  void append(const float* rows, std::size_t n) override {
    const std::size_t m = kvq::detail::checked_mul(n, hd_, std::string("kvq::kv::block_row_store(") + S::name +
                                                              ")::append: rows x head_dim");
    kvq::detail::checked_mul(m, static_cast<std::size_t>(S::storage_bits),
                             std::string("kvq::kv::block_row_store(") + S::name + ")::append: code bits");
    if (m > 0 && rows == nullptr)
      throw std::invalid_argument(std::string("kvq::kv::block_row_store(") + S::name + ")::append: rows is null");
    const block::buffer_sizes z = block::sizes_of(s_, m);
    const std::size_t c0 = codes_.size(), s0 = scales_.size(), z0 = zeros_.size();
    codes_.resize(c0 + z.code_bytes);
    scales_.resize(s0 + z.scales);
    zeros_.resize(z0 + z.zeros);
    const block::quantize_block_fn<S, block::f32_input> f{s_, S::prepare(tv_), rows, codes_.data() + c0,
                                                          z.scales ? scales_.data() + s0 : nullptr,
                                                          z.zeros ? zeros_.data() + z0 : nullptr};
#if defined(KVQ_BLOCK_SIMD)
    // The bulk kernels where the scheme has one: the bits of f(b), many blocks at a time
    // (kvq/block/bulk.hpp; the same dispatch as block::quantize).
    if constexpr (block::bulk::has_quantize<S, block::f32_input>::value) {
      block::bulk::quantize_blocks(s_, f.params, rows, z.blocks, codes_.data() + c0, scales_.data() + s0);
      n_ += n;
      return;
    }
#endif
    for (std::size_t b = 0; b < z.blocks; ++b) f(b);
    n_ += n;
  }
  void dequantize(float* out) const override {
    const block::dequantize_block_fn<S> f{s_, S::prepare(tv_), codes_.data(), scales_.empty() ? nullptr : scales_.data(),
                                          zeros_.empty() ? nullptr : zeros_.data(), out};
    const std::size_t nb = n_ * hd_ / s_.block_size();
#if defined(KVQ_BLOCK_SIMD)
    if constexpr (block::bulk::has_dequantize<S>::value) {  // same bits, many blocks at a time
      block::bulk::dequantize_blocks(s_, f.params, codes_.data(), scales_.data(), nb, out);
      return;
    }
#endif
    for (std::size_t b = 0; b < nb; ++b) f(b);
  }
  std::size_t memory_bytes() const noexcept override {
    return codes_.size() + scales_.size() * sizeof(scale_type) + zeros_.size() * sizeof(float);
  }

 private:
  S s_;
  std::size_t hd_, n_ = 0;
  float tv_;
  std::vector<std::uint8_t> codes_;
  std::vector<scale_type> scales_;
  std::vector<float> zeros_;
};

/// KIVI settings: group size comes from the scheme (default 32), residual length here.
struct kivi_options {
  std::size_t residual = 128;  ///< KIVI's residual_length (a multiple of the group size)
};

template <int Bits, class Compute>
/// KIVI keys: quantized per channel in groups of `group` consecutive tokens; new keys wait
/// at full precision (the compute dtype) until `residual` have accumulated, then all of
/// them are quantized.
class kivi_key_store final : public row_store {
 public:
  /// The KIVI scheme.
  using S = block::kivi_group<Bits, Compute>;
  /// Storage type of scales and zero points and of full-precision rows (Compute::storage).
  using param_t = typename Compute::storage;
  /// An empty store. Throws std::invalid_argument unless o.residual is a positive multiple
  /// of the group size.
  kivi_key_store(S s, std::size_t head_dim, kivi_options o) : s_(s), hd_(head_dim), r_(o.residual) {
    if (r_ == 0 || s_.group == 0 || r_ % s_.group != 0)
      throw std::invalid_argument("kvq::kv::kivi_key_store: residual length " + std::to_string(r_) +
                                  " is not a positive multiple of the group size " + std::to_string(s_.group));
  }
  std::size_t head_dim() const noexcept override { return hd_; }
  std::size_t rows() const noexcept override { return chunks_ * r_ + residual_.size() / hd_; }
  void append(const float* rows, std::size_t n) override {
    const std::size_t m = kvq::detail::checked_mul(n, hd_, "kvq::kv::kivi_key_store::append: rows x head_dim");
    if (m > 0 && rows == nullptr) throw std::invalid_argument("kvq::kv::kivi_key_store::append: rows is null");
    const std::size_t r0 = residual_.size();
    residual_.resize(r0 + m);
    for (std::size_t i = 0; i < m; ++i) residual_[r0 + i] = to_param(Compute::round(rows[i]));
    // Every complete chunk in arrival order, then one erase: erasing after each chunk
    // moved the rest of the residual every time (quadratic in the rows of one append).
    const std::size_t chunk = r_ * hd_, full = residual_.size() / chunk;
    for (std::size_t k = 0; k < full; ++k) quantize_chunk(residual_.data() + k * chunk);
    if (full > 0) residual_.erase(residual_.begin(), residual_.begin() + static_cast<std::ptrdiff_t>(full * chunk));
  }
  void dequantize(float* out) const override {
    const std::size_t g = s_.group, per_chunk_groups = hd_ * (r_ / g), gbytes = g * Bits / 8;
    std::vector<float> tmp(g);
    for (std::size_t ch = 0; ch < chunks_; ++ch)
      for (std::size_t c = 0; c < hd_; ++c)
        for (std::size_t k = 0; k < r_ / g; ++k) {
          const std::size_t idx = ch * per_chunk_groups + c * (r_ / g) + k;
          s_.dequantize_block(codes_.data() + idx * gbytes, from_param(scales_[idx]), from_param(zeros_[idx]), {},
                              tmp.data());
          for (std::size_t j = 0; j < g; ++j) out[(ch * r_ + k * g + j) * hd_ + c] = tmp[j];
        }
    const std::size_t base = chunks_ * r_ * hd_;
    for (std::size_t i = 0; i < residual_.size(); ++i) out[base + i] = from_param(residual_[i]);
  }
  std::size_t memory_bytes() const noexcept override {
    return codes_.size() + (scales_.size() + zeros_.size() + residual_.size()) * sizeof(param_t);
  }

 private:
  static param_t to_param(float v) noexcept {
    if constexpr (std::is_same<Compute, block::f32_input>::value) return v;
    else if constexpr (std::is_same<Compute, block::fp16_input>::value) return float_to_fp16_rn(v);
    else return float_to_bf16_rn(v);
  }
  static float from_param(param_t v) noexcept { return Compute::load(v); }
  // Quantizes the r_ rows at `rows` (one chunk) per channel, groups in token order.
  void quantize_chunk(const param_t* rows) {
    const std::size_t g = s_.group, gbytes = g * Bits / 8;
    std::vector<float> col(g);
    for (std::size_t c = 0; c < hd_; ++c)
      for (std::size_t k = 0; k < r_ / g; ++k) {
        for (std::size_t j = 0; j < g; ++j) col[j] = from_param(rows[(k * g + j) * hd_ + c]);
        const std::size_t c0 = codes_.size();
        codes_.resize(c0 + gbytes);
        float sc = 0.0f, zr = 0.0f;
        s_.template quantize_block<block::f32_input>(col.data(), {}, codes_.data() + c0, &sc, &zr);
        scales_.push_back(to_param(sc));
        zeros_.push_back(to_param(zr));
      }
    ++chunks_;
  }
  S s_;
  std::size_t hd_, r_, chunks_ = 0;
  std::vector<std::uint8_t> codes_;
  std::vector<param_t> scales_, zeros_, residual_;
};

template <int Bits, class Compute>
/// KIVI values: quantized per token in groups of `group` channels; the most recent
/// `residual` values stay at full precision and the oldest is quantized as each new one arrives.
class kivi_value_store final : public row_store {
 public:
  /// The KIVI scheme.
  using S = block::kivi_group<Bits, Compute>;
  /// Storage type of scales and zero points and of full-precision rows (Compute::storage).
  using param_t = typename Compute::storage;
  /// An empty store. Throws std::invalid_argument unless head_dim is a multiple of the
  /// group size.
  kivi_value_store(S s, std::size_t head_dim, kivi_options o) : s_(s), hd_(head_dim), r_(o.residual) {
    if (s_.group == 0 || hd_ % s_.group != 0)
      throw std::invalid_argument("kvq::kv::kivi_value_store: head_dim " + std::to_string(hd_) +
                                  " is not a multiple of the group size " + std::to_string(s_.group));
  }
  std::size_t head_dim() const noexcept override { return hd_; }
  std::size_t rows() const noexcept override { return quantized_ + residual_.size() / hd_; }
  void append(const float* rows, std::size_t n) override {
    const std::size_t m = kvq::detail::checked_mul(n, hd_, "kvq::kv::kivi_value_store::append: rows x head_dim");
    if (m > 0 && rows == nullptr) throw std::invalid_argument("kvq::kv::kivi_value_store::append: rows is null");
    const std::size_t r0 = residual_.size();
    residual_.resize(r0 + m);
    for (std::size_t i = 0; i < m; ++i) residual_[r0 + i] = to_param(Compute::round(rows[i]));
    const std::size_t held = residual_.size() / hd_;
    if (held > r_) quantize_front(held - r_);
  }
  void dequantize(float* out) const override {
    const std::size_t g = s_.group, gbytes = g * Bits / 8, per_row = hd_ / g;
    for (std::size_t t = 0; t < quantized_; ++t)
      for (std::size_t k = 0; k < per_row; ++k) {
        const std::size_t idx = t * per_row + k;
        s_.dequantize_block(codes_.data() + idx * gbytes, from_param(scales_[idx]), from_param(zeros_[idx]), {},
                            out + t * hd_ + k * g);
      }
    for (std::size_t i = 0; i < residual_.size(); ++i) out[quantized_ * hd_ + i] = from_param(residual_[i]);
  }
  std::size_t memory_bytes() const noexcept override {
    return codes_.size() + (scales_.size() + zeros_.size() + residual_.size()) * sizeof(param_t);
  }

 private:
  static param_t to_param(float v) noexcept {
    if constexpr (std::is_same<Compute, block::f32_input>::value) return v;
    else if constexpr (std::is_same<Compute, block::fp16_input>::value) return float_to_fp16_rn(v);
    else return float_to_bf16_rn(v);
  }
  static float from_param(param_t v) noexcept { return Compute::load(v); }
  void quantize_front(std::size_t rows) {
    const std::size_t g = s_.group, gbytes = g * Bits / 8;
    std::vector<float> grp(g);
    for (std::size_t t = 0; t < rows; ++t)
      for (std::size_t k = 0; k < hd_ / g; ++k) {
        for (std::size_t j = 0; j < g; ++j) grp[j] = from_param(residual_[t * hd_ + k * g + j]);
        const std::size_t c0 = codes_.size();
        codes_.resize(c0 + gbytes);
        float sc = 0.0f, zr = 0.0f;
        s_.template quantize_block<block::f32_input>(grp.data(), {}, codes_.data() + c0, &sc, &zr);
        scales_.push_back(to_param(sc));
        zeros_.push_back(to_param(zr));
      }
    residual_.erase(residual_.begin(), residual_.begin() + static_cast<std::ptrdiff_t>(rows * hd_));
    quantized_ += rows;
  }
  S s_;
  std::size_t hd_, r_, quantized_ = 0;
  std::vector<std::uint8_t> codes_;
  std::vector<param_t> scales_, zeros_, residual_;
};

/// A store for one head's K or V in format f (tensor_value: the scheme's frozen tensor value).
inline std::unique_ptr<row_store> make_row_store(const kv_format& f, kv_role role, std::size_t head_dim,
                                                 float tensor_value, kivi_options kivi = {}) {
  return std::visit(
      [&](const auto& s) -> std::unique_ptr<row_store> {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same<T, hp_format>::value) {
          return std::make_unique<plain_row_store>(s, head_dim);
        } else if constexpr (detail::is_kivi<T>::value) {
          constexpr int bits = T::storage_bits;
          using C = typename T::compute_type;
          if (role == kv_role::key) return std::make_unique<kivi_key_store<bits, C>>(s, head_dim, kivi);
          return std::make_unique<kivi_value_store<bits, C>>(s, head_dim, kivi);
        } else if constexpr (std::is_same<T, block::fp8_per_token_head>::value ||
                             std::is_same<T, block::int8_per_token_head>::value) {
          T t = s;
          t.head_dim = head_dim;
          return std::make_unique<block_row_store<T>>(t, head_dim, tensor_value);
        } else {
          return std::make_unique<block_row_store<T>>(s, head_dim, tensor_value);
        }
      },
      f);
}

// ----------------------------------------------------------------------------- bytes
/// The dtype of a KIVI format's full-precision window, scales and zero points (its compute
/// dtype: fp32 for kivi_int*, fp16 for kivi_int*_fp16); std::nullopt for other formats.
inline std::optional<hp_format> kivi_window_dtype(const kv_format& f) {
  return std::visit(
      [](const auto& s) -> std::optional<hp_format> {
        using T = std::decay_t<decltype(s)>;
        (void)s;
        if constexpr (std::is_same<T, hp_format>::value) return std::nullopt;
        else if constexpr (detail::is_kivi<T>::value)
          return std::is_same<typename T::compute_type, block::fp16_input>::value   ? hp_format::fp16
                 : std::is_same<typename T::compute_type, block::bf16_input>::value ? hp_format::bf16
                                                                                     : hp_format::fp32;
        else return std::nullopt;
      },
      f);
}

/// Exact bytes one head's K or V rows hold after `tokens` tokens in format f: the bytes
/// the store of make_row_store(f, role, head_dim, ...) holds (its memory_bytes()), and
/// the one storage rule the planner, the scheme registry and `kvq memory` count with.
/// The single fp32 tensor value of a recipe is not included (the cache counts it once
/// per layer and K/V).
/// ~~~
///   high precision   tokens * d * (4 fp32, 2 bf16/fp16)
///   block recipes    per token ceil(d*bits/8) code bytes + d/B scales (scale_bytes each)
///                    + d/B fp32 zero points when the recipe has them (per-token-head: B = d)
///   KIVI values      the oldest tokens - R tokens: d*bits/8 code bytes + (d/G) scales and
///                    zero points; the last R tokens full precision
///   KIVI keys        whole windows of R tokens: d*R*bits/8 code bytes + d*(R/G) scales and
///                    zero points; the last tokens mod R at full precision
/// ~~~
/// KIVI's scale, zero point and full-precision row width is its compute dtype, as KIVI
/// stores them in the model dtype: 4 bytes (fp32) for kivi_int*, 2 (fp16) for
/// kivi_int*_fp16. G is the group, R = kivi.residual.
/// `name` names the format in error messages (default: format_name(f); callers pass the
/// user's scheme name).
/// 	hrows std::invalid_argument if head_dim is 0 or not a multiple of the block or group
/// size, if a KIVI residual is not a positive multiple of the group, or if the count
/// overflows std::size_t.
inline std::size_t stored_bytes(const kv_format& f, kv_role role, std::size_t head_dim, std::size_t tokens,
                                kivi_options kivi = {}, const std::string& name = {}) {
  const std::string who = name.empty() ? format_name(f) : name;
  const std::string what = "kvq::kv::stored_bytes(" + who + ")";
  auto mul = [&](std::size_t a, std::size_t b) { return kvq::detail::checked_mul(a, b, what + ": bytes"); };
  auto add = [&](std::size_t a, std::size_t b) { return kvq::detail::checked_add(a, b, what + ": bytes"); };
  const std::size_t d = head_dim;
  if (d == 0) throw std::invalid_argument("kvq::kv: " + who + ": head_dim 0");
  return std::visit(
      [&](const auto& s) -> std::size_t {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same<T, hp_format>::value) {
          return mul(mul(tokens, d), hp_bytes(s));
        } else if constexpr (detail::is_kivi<T>::value) {
          const std::size_t g = s.group, pb = sizeof(typename T::compute_type::storage), r = kivi.residual;
          if (g == 0 || d % g != 0)
            throw std::invalid_argument("kvq::kv: head_dim " + std::to_string(d) + " is not a multiple of " + who + "'s group size " +
                                        std::to_string(g));
          if (r == 0 || r % g != 0)
            throw std::invalid_argument("kvq::kv: " + who + ": KIVI residual " + std::to_string(r) +
                                        " is not a positive multiple of the group size " + std::to_string(g));
          const std::size_t code_row = d * static_cast<std::size_t>(T::storage_bits) / 8;
          if (role == kv_role::value) {
            const std::size_t q = tokens > r ? tokens - r : 0;
            return add(mul(q, add(code_row, mul(2 * (d / g), pb))), mul(mul(tokens - q, d), pb));
          }
          const std::size_t q = (tokens / r) * r;
          return add(add(mul(q, code_row), mul(mul(2 * d, q / g), pb)), mul(mul(tokens - q, d), pb));
        } else {
          std::size_t b = s.block_size();
          if constexpr (std::is_same<T, block::fp8_per_token_head>::value ||
                        std::is_same<T, block::int8_per_token_head>::value)
            b = d;
          if (b == 0 || d % b != 0)
            throw std::invalid_argument("kvq::kv: head_dim " + std::to_string(d) + " is not a multiple of " + who + "'s block size " +
                                        std::to_string(b));
          const std::size_t blocks = d / b;
          const std::size_t code_bits = mul(d, static_cast<std::size_t>(T::storage_bits));
          const std::size_t per = code_bits / 8 + (code_bits % 8 != 0 ? 1 : 0) +
                                  blocks * static_cast<std::size_t>(T::scale_bytes) +
                                  (T::has_zero_point ? blocks * sizeof(float) : 0);
          return mul(tokens, per);
        }
      },
      f);
}

/// Stored bits per value of format f for long contexts: 8 * bytes / values of K and V
/// together over one more KIVI residual window of tokens (stored_bytes), so codes, block
/// scales and zero points count and the tensor value and KIVI's full-precision window do
/// not (e.g. 4.5 for NVFP4, 6 for kivi_int4, 5 for kivi_int4_fp16 at group 32). One
/// division of exact integers: the nearest double to the true ratio.
/// 	hrows std::invalid_argument as stored_bytes.
inline double bits_per_value(const kv_format& f, std::size_t head_dim, kivi_options kivi = {},
                             const std::string& name = {}) {
  const std::size_t r = kivi.residual == 0 ? 1 : kivi.residual;
  auto both = [&](std::size_t n) {
    return stored_bytes(f, kv_role::key, head_dim, n, kivi, name) + stored_bytes(f, kv_role::value, head_dim, n, kivi, name);
  };
  const std::size_t extra = both(2 * r) - both(r);
  return 8.0 * static_cast<double>(extra) / (2.0 * static_cast<double>(r) * static_cast<double>(head_dim));
}

/// Stored bits per value of format f at a context of `tokens` tokens: every byte of K and
/// V (stored_bytes, KIVI's full-precision window included; the tensor value not) over
/// the 2 * tokens * head_dim values. NaN for 0 tokens.
/// 	hrows std::invalid_argument as stored_bytes.
inline double bits_per_value_at(const kv_format& f, std::size_t head_dim, std::size_t tokens, kivi_options kivi = {},
                                const std::string& name = {}) {
  const std::size_t b = kvq::detail::checked_add(stored_bytes(f, kv_role::key, head_dim, tokens, kivi, name),
                                                 stored_bytes(f, kv_role::value, head_dim, tokens, kivi, name),
                                                 "kvq::kv::bits_per_value_at: bytes");
  return 8.0 * static_cast<double>(b) / (2.0 * static_cast<double>(tokens) * static_cast<double>(head_dim));
}

}  // namespace kv
}  // namespace kvq
