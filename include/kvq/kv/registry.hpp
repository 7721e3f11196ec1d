/// \file
/// kvq/kv/registry.hpp — the scheme registry: every KV storage scheme kvq offers, under
/// one canonical name, with one description, one bits-per-value rule and one
/// quantize–dequantize round trip. The kvq command and its studies, `kvq memory`, the
/// verifier, the planner, the examples and the Python module all resolve scheme names
/// here, so one name always means the same bits.
///
/// A scheme is a storage format (kv_format: high precision or a kvq::block recipe) plus
/// the rule that picks its tensor-level value when the caller gives none:
/// ~~~
///   unit        1.0 (vLLM's default k_scale = v_scale = 1.0)
///   calibrated  vLLM calc_kv_scales: amax * fp32(1/200) for K, amax * fp32(1/100) for V
///   from_amax   the recipe's own rule (TE NVFP4: the tensor amax; vLLM NVFP4: amax/2688;
///               torchao two-level: its per_tensor_scale)
///   none        the format has no tensor value
/// ~~~
/// The round trip is the KV store itself (kv/store.hpp): a tokens x head_dim matrix of
/// one head is appended to the store the format's cache would use and read back. That
/// makes the cache, the studies and the verifier agree by construction, and gives KIVI
/// one definition of its full-precision window (KIVI models/llama_kivi.py): keys are
/// quantized per channel in chunks of `residual` (128) tokens, groups of 32 tokens, so
/// the last n mod 128 keys stay at full precision; values are quantized per token in
/// groups of 32 channels, except the most recent 128, which stay at full precision.
/// Full precision is the scheme's compute type (fp32 for kivi_int*, fp16 for
/// kivi_int*_fp16).
///
/// Canonical names, with the old spellings kept as aliases (output always prints the
/// canonical name): `kvq study outliers --help`, `kvq memory --list-formats` or
/// scheme_names() list them.
///
/// Users add their own schemes with register_scheme(): from a kvq::block recipe type
/// (`make_scheme<S>`) or from a pair of callables (bits per value, round trip). Every study
/// then accepts the new name (examples/custom_scheme.cpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <kvq/block.hpp>
#include <kvq/core/float16.hpp>
#include <kvq/kv/cache.hpp>
#include <kvq/kv/store.hpp>

namespace kvq {
namespace kv {

/// How a scheme's tensor-level value is chosen when the caller gives none.
/// none: the format has no tensor value; unit: 1.0; calibrated: vLLM calc_kv_scales
/// (amax * fp32(1/200) for K, 1/100 for V); from_amax: the recipe's own rule (see the file comment).
enum class tensor_rule : unsigned char { none, unit, calibrated, from_amax };

/// Which elements share one scale (to tell which elements share a scale with an
/// outlier channel).
enum class scale_grouping : unsigned char {
  none,        ///< no scale (bf16, fp16, fp32)
  tensor,      ///< one scale for the whole tensor (FP8 per tensor)
  row_blocks,  ///< blocks of consecutive channels of one token (NVFP4, MX; per-token-head: the whole row)
  channel      ///< per channel, groups along tokens (KIVI keys)
};

/// One storage scheme. Built-in schemes have a `format`; user schemes made from
/// callables have none (caches and the planner then need a format and refuse them).
struct scheme {
  std::string name;                  ///< canonical name
  std::vector<std::string> aliases;  ///< old spellings, accepted on input
  /// Human-readable description of the scheme.
  std::string description;
  std::optional<kv_format> format;   ///< the library storage format behind it
  /// How the tensor-level value is chosen when the caller gives none.
  tensor_rule rule = tensor_rule::none;
  /// Elements per scale along head_dim: 1 = no scale or per element, 0 = the whole
  /// head_dim (per-token-head); head_dim must be a multiple of it when block_multiple.
  std::size_t block = 1;
  /// True when head_dim must be a multiple of `block`.
  bool block_multiple = false;
  /// Stored bits per value for a head dimension (codes, scales, zero points; the
  /// tensor value and KIVI's full-precision window are not counted). Built-in schemes
  /// count with kv::bits_per_value (store.hpp), the rule of the stores and the planner;
  /// it throws std::invalid_argument for a head_dim the scheme cannot store.
  std::function<double(std::size_t head_dim)> bits_per_value;
  /// Which elements share one scale, for keys and for values.
  std::function<scale_grouping(kv_role)> grouping;
  /// out = dequantize(quantize(in)) for one head: tokens x head_dim row-major.
  std::function<void(kv_role, const float* in, float* out, std::size_t tokens, std::size_t head_dim)> round_trip;
  /// Called by round_trip_rows with each range of rows [first, first + count) of `out` as
  /// soon as they hold their final values.
  using rows_done = std::function<void(std::size_t first, std::size_t count)>;
  /// round_trip with rows_done called on consecutive ranges that cover every row once, in
  /// increasing order, each right after the round trip wrote it (still in cache): a
  /// caller's pass over in and out rides along (the built-in schemes; empty for user
  /// schemes, which kv::round_trip_rows serves with one range after round_trip).
  std::function<void(kv_role, const float* in, float* out, std::size_t tokens, std::size_t head_dim,
                     const rows_done& done)>
      round_trip_in_rows;

  /// Throws std::invalid_argument unless head_dim suits the scheme.
  void check_head_dim(std::size_t head_dim) const {
    if (head_dim == 0) throw std::invalid_argument("scheme " + name + ": head_dim 0");
    if (block_multiple && block > 1 && head_dim % block != 0)
      throw std::invalid_argument("scheme " + name + ": head_dim " + std::to_string(head_dim) +
                                  " is not a multiple of its block size " + std::to_string(block));
  }
  /// The round trip into a new matrix.
  matrix_f round_trip_matrix(kv_role role, const matrix_f& x) const {
    matrix_f out(x.rows(), x.cols());
    round_trip(role, x.data(), out.data(), static_cast<std::size_t>(x.rows()), static_cast<std::size_t>(x.cols()));
    return out;
  }
};

namespace detail {

template <class T>
struct is_per_token_head : std::false_type {};
template <class E, class I>
struct is_per_token_head<block::per_token_head<E, I>> : std::true_type {};

inline scale_grouping format_grouping(const kv_format& f, kv_role role) {
  return std::visit(
      [&](const auto& s) -> scale_grouping {
        using T = std::decay_t<decltype(s)>;
        (void)s;
        if constexpr (std::is_same<T, hp_format>::value) return scale_grouping::none;
        else if constexpr (kv::detail::is_kivi<T>::value)
          return role == kv_role::key ? scale_grouping::channel : scale_grouping::row_blocks;
        else if constexpr (T::tensor != block::tensor_kind::none && T::scale_bytes == 0) return scale_grouping::tensor;
        else return scale_grouping::row_blocks;
      },
      f);
}

inline std::size_t format_block(const kv_format& f) {
  return std::visit(
      [](const auto& s) -> std::size_t {
        using T = std::decay_t<decltype(s)>;
        if constexpr (std::is_same<T, hp_format>::value) return 1;
        else if constexpr (is_per_token_head<T>::value) return 0;
        else return static_cast<std::size_t>(s.block_size());
      },
      f);
}

/// The tensor value a rule gives for data with this tensor amax.
inline float rule_tensor_value(const kv_format& f, tensor_rule rule, float amax, kv_role role) {
  switch (rule) {
    case tensor_rule::none:
    case tensor_rule::unit: return 1.0f;
    case tensor_rule::calibrated:
    case tensor_rule::from_amax: return calibrated_tensor_value(f, amax, role);
  }
  return 1.0f;
}

/// Rows per pass of store_round_trip for formats with independent rows: 128 KiB of
/// fp32 input at head dimension 128.
constexpr std::size_t round_trip_chunk_tokens = 256;

/// The round trip through the store the format's cache uses (the bits of one store
/// holding every row, appended at once and dequantized).
inline void store_round_trip(const kv_format& f, tensor_rule rule, kv_role role, const float* in, float* out,
                             std::size_t tokens, std::size_t head_dim, const scheme::rows_done* done = nullptr) {
  if (tokens == 0) return;
  if (in == nullptr || out == nullptr) throw std::invalid_argument("kvq::kv::scheme round trip: null buffer");
  // Checked before the tensor amax reads tokens x head_dim values: a wrapped product
  // would read (and the store write) a different count than the caller's buffers hold.
  const std::size_t values = kvq::detail::checked_mul(tokens, head_dim, "kvq::kv::scheme round trip: tokens x head_dim");
  float tv = 1.0f;
  if (has_tensor_value(f) && rule != tensor_rule::unit) {
    const float amax = block::tensor_amax(in, values, tensor_amax_rule(f));
    tv = rule_tensor_value(f, rule, amax, role);
  }
  // Formats whose rows are quantized independently of each other (given the tensor
  // value) go through the store a chunk of rows at a time, with the same rows out: the
  // codes of a chunk stay in cache between the two passes, and no context-sized code
  // buffer is allocated. KIVI's key groups run across tokens and its residual window is
  // the last tokens: its store takes the whole tensor.
  const std::size_t chunk = rows_independent(f) ? round_trip_chunk_tokens : tokens;
  for (std::size_t t0 = 0; t0 < tokens; t0 += chunk) {
    const std::size_t m = std::min(chunk, tokens - t0);
    std::unique_ptr<row_store> st = make_row_store(f, role, head_dim, tv);
    st->append(in + t0 * head_dim, m);
    st->dequantize(out + t0 * head_dim);
    if (done) (*done)(t0, m);
  }
}

}  // namespace detail

/// A scheme from a storage format and its tensor rule (the built-ins are made so).
inline scheme make_scheme(std::string name, std::string description, kv_format f, tensor_rule rule,
                          std::vector<std::string> aliases = {}) {
  scheme s;
  s.name = std::move(name);
  s.aliases = std::move(aliases);
  s.description = std::move(description);
  s.format = f;
  s.rule = has_tensor_value(f) ? rule : tensor_rule::none;
  s.block = detail::format_block(f);
  s.block_multiple = s.block > 1;
  s.bits_per_value = [f, n = s.name](std::size_t d) { return kv::bits_per_value(f, d, kivi_options{}, n); };
  s.grouping = [f](kv_role r) { return detail::format_grouping(f, r); };
  const tensor_rule r = s.rule;
  s.round_trip = [f, r](kv_role role, const float* in, float* out, std::size_t n, std::size_t d) {
    detail::store_round_trip(f, r, role, in, out, n, d);
  };
  s.round_trip_in_rows = [f, r](kv_role role, const float* in, float* out, std::size_t n, std::size_t d,
                                const scheme::rows_done& done) {
    detail::store_round_trip(f, r, role, in, out, n, d, &done);
  };
  return s;
}

/// s.round_trip(role, in, out, tokens, head_dim), calling done(first, count) on ranges of
/// finished rows that cover [0, tokens) once, in increasing order (scheme::round_trip_in_rows
/// where the scheme has it: chunks of round_trip_chunk_tokens rows for the formats with
/// independent rows; else one range after the whole round trip). The same out either way.
inline void round_trip_rows(const scheme& s, kv_role role, const float* in, float* out, std::size_t tokens,
                            std::size_t head_dim, const scheme::rows_done& done) {
  if (s.round_trip_in_rows) {
    s.round_trip_in_rows(role, in, out, tokens, head_dim, done);
    return;
  }
  s.round_trip(role, in, out, tokens, head_dim);
  if (tokens > 0) done(0, tokens);
}

/// A user scheme from two callables: stored bits per value (of head_dim) and the
/// round trip (role, in, out, tokens, head_dim). `block` > 1 asks head_dim to be a
/// multiple of it; `grouping` tells the studies which elements share a scale.
inline scheme make_scheme(std::string name, std::string description,
                          std::function<double(std::size_t)> bits_per_value,
                          std::function<void(kv_role, const float*, float*, std::size_t, std::size_t)> round_trip,
                          std::size_t block = 1, scale_grouping grouping = scale_grouping::row_blocks) {
  if (!bits_per_value || !round_trip)
    throw std::invalid_argument("kvq::kv::make_scheme(" + name + "): both callables are required");
  scheme s;
  s.name = std::move(name);
  s.description = std::move(description);
  s.block = block;
  s.block_multiple = block > 1;
  s.bits_per_value = std::move(bits_per_value);
  s.grouping = [grouping](kv_role) { return grouping; };
  s.round_trip = std::move(round_trip);
  return s;
}

/// The registry: built-in schemes first (in the order below), then user schemes in the
/// order they were registered. Thread-safe for registration and lookup.
class registry {
 public:
  /// The process-wide registry (built-in schemes registered on first use).
  static registry& global() {
    static registry r;
    return r;
  }
  /// Adds a scheme. Throws std::invalid_argument if its name or an alias is taken or
  /// empty, or its callables are missing.
  void add(scheme s) {
    std::lock_guard<std::mutex> lock(mu_);
    check_new(s.name, s);
    for (const auto& a : s.aliases) check_new(a, s);
    if (!s.bits_per_value || !s.grouping || !s.round_trip)
      throw std::invalid_argument("kvq::kv::register_scheme(" + s.name + "): scheme without its callables");
    all_.push_back(std::make_shared<const scheme>(std::move(s)));
  }
  /// The scheme with this canonical name or alias, or nullptr.
  std::shared_ptr<const scheme> lookup(const std::string& name) const {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& s : all_) {
      if (s->name == name) return s;
      for (const auto& a : s->aliases)
        if (a == name) return s;
    }
    return nullptr;
  }
  /// Canonical names of all schemes, in registry order.
  std::vector<std::string> names() const {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> v;
    for (const auto& s : all_) v.push_back(s->name);
    return v;
  }

 private:
  registry();
  void check_new(const std::string& n, const scheme& s) const {
    if (n.empty()) throw std::invalid_argument("kvq::kv::register_scheme: empty scheme name");
    for (const auto& e : all_) {
      bool taken = e->name == n;
      for (const auto& a : e->aliases) taken = taken || a == n;
      if (taken)
        throw std::invalid_argument("kvq::kv::register_scheme(" + s.name + "): the name '" + n +
                                    "' is already taken by scheme " + e->name);
    }
  }
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<const scheme>> all_;
};

/// Every canonical scheme name, built-ins first.
inline std::vector<std::string> scheme_names() { return registry::global().names(); }

/// "a, b, c": the canonical names, for error messages.
inline std::string scheme_list() {
  std::string s;
  for (const auto& n : scheme_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

/// The scheme with this canonical name or alias. Throws std::invalid_argument naming
/// the allowed names otherwise. The reference stays valid for the program's life.
inline const scheme& find_scheme(const std::string& name) {
  // The registry never removes a scheme, so the object outlives this pointer.
  const std::shared_ptr<const scheme> s = registry::global().lookup(name);
  if (!s) throw std::invalid_argument("unknown scheme '" + name + "' (allowed: " + scheme_list() + ")");
  return *s;
}

/// The canonical name of a name or alias (throws for unknown names).
inline std::string canonical_name(const std::string& name) { return find_scheme(name).name; }

/// Registers a user scheme; every study, the planner (for schemes with a format) and the
/// verifier (idem) accept it by name afterwards.
inline void register_scheme(scheme s) { registry::global().add(std::move(s)); }

/// The storage format behind a scheme (throws for user schemes made from callables).
inline kv_format format_of(const scheme& s) {
  if (!s.format)
    throw std::invalid_argument("scheme " + s.name + " is a user scheme without a kvq storage format");
  return *s.format;
}

/// The tensor value a call (quantize, dequantize, verify) uses for scheme s: the
/// caller's when given; else 1.0 for schemes whose rule is `unit` (vLLM's default
/// k_scale); else none, and the recipe computes it from the data as
/// kvq::block::quantize does with tensor_value::computed().
inline std::optional<float> tensor_value_for(const scheme& s, std::optional<float> given) {
  if (given) return given;
  if (s.rule == tensor_rule::unit) return 1.0f;
  return std::nullopt;
}

/// The recipe `r` of scheme `scheme_name` set up for rows of `row` elements: a
/// per-token-head recipe takes the row as its block (head_dim); every recipe's blocks
/// must tile the row. Throws std::invalid_argument naming the scheme otherwise.
template <class S>
S recipe_for_rows(const S& r, std::size_t row, const std::string& scheme_name) {
  S s = r;
  if constexpr (detail::is_per_token_head<S>::value) {
    if (row == 0) throw std::invalid_argument("scheme " + scheme_name + " needs rows of length > 0");
    s.head_dim = row;
  }
  if (s.block_size() == 0 || row % s.block_size() != 0)
    throw std::invalid_argument("row length " + std::to_string(row) +
                                " (the last dimension) is not a multiple of the block size " +
                                std::to_string(s.block_size()) + " of scheme " + scheme_name);
  return s;
}

/// A cache policy that stores every token with the scheme (K and V), its tensor value
/// fixed by the scheme's rule: 1.0 for `unit`, calibrated from the first chunk otherwise.
inline precision_policy uniform_policy(const scheme& s) {
  precision_policy p = precision_policy::uniform(format_of(s));
  if (s.rule == tensor_rule::unit) p.k_tensor_value = p.v_tensor_value = 1.0f;
  return p;
}

inline registry::registry() {
  namespace b = kvq::block;
  auto add_builtin = [this](std::string n, std::string d, kv_format f, tensor_rule r,
                            std::vector<std::string> al = {}) {
    all_.push_back(std::make_shared<const scheme>(make_scheme(std::move(n), std::move(d), f, r, std::move(al))));
  };
  using R = tensor_rule;
  add_builtin("bf16", "bf16 round-to-nearest-even, no scale (baseline)", hp_format::bf16, R::none);
  add_builtin("fp16", "fp16 round-to-nearest-even, no scale", hp_format::fp16, R::none);
  add_builtin("fp32", "fp32, unquantized", hp_format::fp32, R::none);
  add_builtin("fp8_e4m3", "FP8 e4m3 per tensor, k_scale = v_scale = 1 (vLLM default; CUDA store)",
              b::fp8_e4m3_per_tensor{}, R::unit);
  add_builtin("fp8_e4m3_cal",
              "FP8 e4m3 per tensor, calibrated k_scale = amax/200, v_scale = amax/100 (vLLM calc_kv_scales)",
              b::fp8_e4m3_per_tensor{}, R::calibrated, {"fp8_e4m3_per_tensor"});
  add_builtin("fp8_e5m2", "FP8 e5m2 per tensor, scale 1 (vLLM fp8_e5m2)", b::fp8_e5m2_per_tensor{}, R::unit);
  add_builtin("fp8_e5m2_cal", "FP8 e5m2 per tensor, calibrated k_scale = amax/200, v_scale = amax/100",
              b::fp8_e5m2_per_tensor{}, R::calibrated, {"fp8_e5m2_per_tensor"});
  add_builtin("fp8_per_token_head", "FP8 e4m3, one fp32 scale per (token, head) (vLLM fp8_per_token_head, IEEE division)",
              b::fp8_per_token_head{}, R::none, {"fp8_tokhead"});
  add_builtin("int8_per_token_head", "INT8, one fp32 scale per (token, head) (vLLM int8_per_token_head, IEEE division)",
              b::int8_per_token_head{}, R::none);
  add_builtin("nvfp4_te", "NVFP4 (e2m1, 16-element ue4m3 scales), TransformerEngine recipe, tensor amax from the data",
              b::nvfp4_te{}, R::from_amax);
  add_builtin("nvfp4_te_enc_div",
              "NVFP4, TransformerEngine's rowwise order (elements times S_enc / SF, quantize_nvfp4.cuh), "
              "tensor amax from the data",
              b::nvfp4_te_enc_div{}, R::from_amax);
  add_builtin("nvfp4_vllm", "NVFP4, vLLM KV-cache store, k_scale = amax/2688 (IEEE model of rcp.approx)",
              b::nvfp4_vllm<>{}, R::from_amax);
  add_builtin("nvfp4_vllm_4over6", "NVFP4, vLLM 4over6 scale search (IEEE model of rcp.approx)",
              b::nvfp4_vllm_4over6<>{}, R::from_amax);
  add_builtin("nvfp4_torchao", "NVFP4, torchao single-level (scale clamp [2^-6, 448])", b::nvfp4_torchao{},
              R::from_amax);
  add_builtin("nvfp4_torchao_two_level", "NVFP4, torchao two-level with per_tensor_scale from the data",
              b::nvfp4_torchao_two_level{}, R::from_amax);
  add_builtin("mxfp8_e4m3_floor", "MXFP8 e4m3 (32-element ue8m0 scales), OCP floor rule", b::mxfp8_e4m3_floor{},
              R::none);
  add_builtin("mxfp8_e5m2_floor", "MXFP8 e5m2, OCP floor rule", b::mxfp8_e5m2_floor{}, R::none);
  add_builtin("mxfp6_e3m2_floor", "MXFP6 e3m2 (codes one per byte), OCP floor rule", b::mxfp6_e3m2_floor{}, R::none);
  add_builtin("mxfp6_e2m3_floor", "MXFP6 e2m3 (codes one per byte), OCP floor rule", b::mxfp6_e2m3_floor{}, R::none);
  add_builtin("mxfp4_floor", "MXFP4 (e2m1, 32-element ue8m0 scales), OCP floor rule", b::mxfp4_floor{}, R::none);
  add_builtin("mxfp8_e4m3_rceil", "MXFP8 e4m3, round-up scale rule (cuBLAS/CUTLASS/TransformerEngine)",
              b::mxfp8_e4m3_rceil{}, R::none, {"mxfp8"});
  add_builtin("mxfp8_e5m2_rceil", "MXFP8 e5m2, round-up scale rule (TransformerEngine)", b::mxfp8_e5m2_rceil{},
              R::none);
  add_builtin("mxfp6_e3m2_rceil", "MXFP6 e3m2, round-up scale rule (TransformerEngine)", b::mxfp6_e3m2_rceil{},
              R::none);
  add_builtin("mxfp6_e2m3_rceil", "MXFP6 e2m3, round-up scale rule (TransformerEngine)", b::mxfp6_e2m3_rceil{},
              R::none);
  add_builtin("mxfp4_rceil", "MXFP4, round-up scale rule (cuBLAS/CUTLASS/TransformerEngine)", b::mxfp4_rceil{},
              R::none);
  add_builtin("mxfp8_e4m3_rceil_torchao", "MXFP8 e4m3, round-up scale rule as torchao RCEIL (_to_mx_rceil)",
              b::mx_rceil_torchao<kvq::fmt::e4m3>{}, R::none);
  add_builtin("mxfp8_e5m2_rceil_torchao", "MXFP8 e5m2, round-up scale rule as torchao RCEIL",
              b::mx_rceil_torchao<kvq::fmt::e5m2>{}, R::none);
  add_builtin("mxfp6_e3m2_rceil_torchao", "MXFP6 e3m2, round-up scale rule as torchao RCEIL",
              b::mx_rceil_torchao<kvq::fmt::e3m2>{}, R::none);
  add_builtin("mxfp6_e2m3_rceil_torchao", "MXFP6 e2m3, round-up scale rule as torchao RCEIL",
              b::mx_rceil_torchao<kvq::fmt::e2m3>{}, R::none);
  add_builtin("mxfp4_rceil_torchao", "MXFP4, round-up scale rule as torchao RCEIL", b::mx_rceil_torchao<kvq::fmt::e2m1>{},
              R::none);
  add_builtin("kivi_int2", "KIVI INT2: keys per channel, values per token, groups of 32, fp32 window of 128",
              b::kivi_int2{}, R::none);
  add_builtin("kivi_int4", "KIVI INT4: keys per channel, values per token, groups of 32, fp32 window of 128",
              b::kivi_int4{}, R::none);
  add_builtin("kivi_int8", "KIVI INT8: keys per channel, values per token, groups of 32, fp32 window of 128",
              b::kivi_int8{}, R::none);
  add_builtin("kivi_int2_fp16", "KIVI INT2 computing in fp16 (scales, zero points and window in fp16)",
              b::kivi_group_fp16<2>{}, R::none);
  add_builtin("kivi_int4_fp16", "KIVI INT4 computing in fp16 (scales, zero points and window in fp16)",
              b::kivi_group_fp16<4>{}, R::none);
  add_builtin("kivi_int8_fp16", "KIVI INT8 computing in fp16 (scales, zero points and window in fp16)",
              b::kivi_group_fp16<8>{}, R::none);
}

}  // namespace kv
}  // namespace kvq
