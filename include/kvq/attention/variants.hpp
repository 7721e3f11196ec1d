/// \file
/// kvq/attention/variants.hpp — host-side attention paths over one head's K/V:
///
/// ~~~
///   reference_attention        double precision (the high-precision path)
///   storage_attention          K/V through a kv_codec (any storage scheme), then fp32 or
///                              bf16 math; optional Hadamard rotation of the head dimension
///   fa3_fp8_attention<F>       FlashAttention-3's FP8 forward: Q/K/V in F (e4m3 by default),
///                              P scaled by 2^max_offset and cast to F, block-wise online
///                              softmax, forward or reverse KV order; optional Hadamard
///                              (plain or random-sign), per-block K/V descales, per-query
///                              Q descale, ideal fp32 or tensor-core accumulation
/// ~~~
///
/// Every path takes optional per-key score biases beta (one float per token, natural
/// units: s_t = q.k_t / sqrt(d) + beta_t, as a compacted cache defines them, kvq/compact/):
/// the reference adds them in double after the division by sqrt(d), storage in fp32 after
/// the scale multiply, FA3 in fp32 on the raw score after converting them to raw-score
/// units (kernels.hpp says why). No biases (the default) is the old path, bit for bit.
///
/// Each path prepares its K/V once (O(n d) memory, copies owned by the object) and then
/// answers one query at a time with run(q, p, o, workspace): p receives the n attention
/// weights the path used, o the d outputs. run_prefix(q, keys, p, o, workspace) attends
/// over the first `keys` tokens only, which is causal attention for a query at position
/// keys - 1 (the K/V were prepared once for all n tokens, so a scale computed over the
/// whole context stays the one every prefix sees); run(...) is run_prefix with keys = n. Shapes are checked here (std::invalid_argument
/// naming them); the per-query kernels are kvq/attention/kernels.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <kvq/attention/block_descale.hpp>
#include <kvq/attention/codec.hpp>
#include <kvq/attention/fa3_tiles.hpp>
#include <kvq/attention/hadamard.hpp>
#include <kvq/attention/kernels.hpp>
#include <kvq/attention/weights_batch.hpp>
#include <kvq/format/formats.hpp>
#include <kvq/core/error.hpp>
#include <kvq/core/matrix.hpp>
#include <kvq/mma/api.hpp>

namespace kvq {
namespace attention {

/// Per-thread scratch; grows on demand, reused across queries.
struct workspace {
  /// \var d0
  /// Double scratch: the reference path's P.V tree accumulator (pv_scratch(n, d) doubles).
  /// \var d1
  /// Double scratch: the reference path's row of d products.
  std::vector<double> d0, d1;
  /// \var f0
  /// Float scratch: the storage path's n scores; the FA3 path's kernel scratch (fa3_scratch).
  /// \var f1
  /// Float scratch: the storage path's P.V tree accumulator; the FA3 path's raw-score
  /// biases for a query with its own descale.
  /// \var f2
  /// Float scratch: the storage path's row of d products.
  /// \var q
  /// The query as the kernel sees it (rotated, quantized; head_dim floats).
  std::vector<float> f0, f1, f2, q;

  /// At least n elements of v: resizes v when it is shorter (never shrinks), so the
  /// buffer is allocated once per thread and reused by later queries.
  template <class T>
  static T* get(std::vector<T>& v, std::size_t n) {
    if (v.size() < n) v.resize(n);
    return v.data();
  }
};

namespace detail {

using kvq::detail::fail;
using kvq::detail::shape_of;

inline void check_kv(const char* where, const matrix_f& K, const matrix_f& V) {
  if (K.rows() == 0) fail(where, "empty context: " + shape_of("K", K));
  if (K.rows() == 1) fail(where, "context of a single token (need at least 2): " + shape_of("K", K));
  if (K.cols() == 0) fail(where, "head_dim 0: " + shape_of("K", K));
  if (K.rows() != V.rows() || K.cols() != V.cols())
    fail(where, "mismatched shapes: " + shape_of("K", K) + ", " + shape_of("V", V));
}

inline void check_same_shape(const char* where, const char* what, const matrix_f& in, const matrix_f& out) {
  if (in.rows() != out.rows() || in.cols() != out.cols())
    fail(where, std::string("codec for ") + what + " returned " + shape_of("a matrix", out) + " for input " +
                    shape_of(what, in));
}

inline rows_view<float> view(const matrix_f& m) {
  return rows_view<float>{m.data(), static_cast<std::size_t>(m.rows()), static_cast<std::size_t>(m.cols()),
                          static_cast<std::size_t>(m.cols())};
}

/// The first `keys` rows of m (a causal query's prefix); checked by check_prefix.
inline rows_view<float> view_prefix(const matrix_f& m, std::size_t keys) {
  return rows_view<float>{m.data(), keys, static_cast<std::size_t>(m.cols()), static_cast<std::size_t>(m.cols())};
}

/// A prefix of 2 to n keys: the softmax paths need two tokens, as the constructors do.
inline void check_prefix(const char* where, std::size_t keys, std::size_t n) {
  if (keys < 2 || keys > n)
    fail(where, "prefix of " + std::to_string(keys) + " keys (allowed: 2 to the " + std::to_string(n) + " tokens)");
}

/// The arguments of a run_prefix_batch: every key count a prefix (check_prefix), and with
/// more than one query, rows of p long enough for every query's weights and rows of o
/// for head_dim outputs.
inline void check_batch(const char* where, std::size_t n_q, const std::size_t* keys, std::size_t n,
                        std::size_t p_stride, std::size_t o_stride, std::size_t d) {
  for (std::size_t v = 0; v < n_q; ++v) {
    check_prefix(where, keys[v], n);
    if (p_stride < keys[v] && n_q > 1)
      fail(where, "p_stride " + std::to_string(p_stride) + " is below the " + std::to_string(keys[v]) +
                      " weights of query " + std::to_string(v));
  }
  if (o_stride < d && n_q > 1)
    fail(where, "o_stride " + std::to_string(o_stride) + " is below head_dim " + std::to_string(d));
}

/// Queries a run_prefix_batch scores per pass over K and V.
constexpr std::size_t batch_query_group = 8;

/// fn(v0, g, n) for each group of up to batch_query_group queries [v0, v0 + g) in order,
/// n the largest key count of the group (the rows its pass reads).
template <class Fn>
inline void for_each_query_group(std::size_t n_q, const std::size_t* keys, Fn&& fn) {
  for (std::size_t v0 = 0; v0 < n_q; v0 += batch_query_group) {
    const std::size_t g = n_q - v0 < batch_query_group ? n_q - v0 : batch_query_group;
    std::size_t n = 0;
    for (std::size_t v = v0; v < v0 + g; ++v) n = keys[v] > n ? keys[v] : n;
    fn(v0, g, n);
  }
}

inline void check_bias(const char* where, const std::vector<float>& bias, const matrix_f& K) {
  if (bias.empty()) return;
  if (bias.size() != static_cast<std::size_t>(K.rows()))
    fail(where, std::to_string(bias.size()) + " key biases for " + shape_of("K", K));
  for (float b : bias)
    if (!finite(b)) fail(where, "key biases must be finite");
}

inline const float* bias_ptr(const std::vector<float>& bias) { return bias.empty() ? nullptr : bias.data(); }

inline matrix_f hadamard_rows(const matrix_f& m, const char* where) {
  const std::size_t d = static_cast<std::size_t>(m.cols());
  if (!is_pow2(d)) fail(where, "Hadamard rotation needs a power-of-two head_dim, got " + std::to_string(d));
  matrix_f r = m;
  for (Eigen::Index i = 0; i < r.rows(); ++i) hadamard_rotate(&r(i, 0), d);
  return r;
}

/// softmax scale as FlashAttention's Python front end computes it: head_dim ** -0.5 in
/// double, passed to the kernel as float.
inline float default_softmax_scale(std::size_t d) {
  return static_cast<float>(1.0 / math::sqrt(static_cast<double>(d)));
}

}  // namespace detail

// ---------------------------------------------------------------------------

/// The high-precision path: p = softmax(q.K^T / sqrt(d) + beta), o = p V, in double
/// (reference_query) over copies of K and V (tokens x head_dim floats).
class reference_attention {
 public:
  /// bias: per-key score biases (empty: none), added in double after the 1/sqrt(d).
  /// Throws std::invalid_argument if K has fewer than 2 rows or 0 columns, V's shape
  /// differs from K's, or bias is neither empty nor one finite value per row of K.
  reference_attention(const matrix_f& K, const matrix_f& V, std::vector<float> bias = {})
      : K_(K), V_(V), bias_(std::move(bias)) {
    detail::check_kv("kvq::attention::reference_attention", K, V);
    detail::check_bias("kvq::attention::reference_attention", bias_, K);
  }
  /// Context length n (rows of K).
  std::size_t tokens() const { return static_cast<std::size_t>(K_.rows()); }
  /// Head dimension d (columns of K).
  std::size_t head_dim() const { return static_cast<std::size_t>(K_.cols()); }
  /// Name of the path for reports.
  std::string name() const { return bias_.empty() ? "reference (double)" : "reference (double, key biases)"; }
  /// The per-key score biases (empty: none).
  const std::vector<float>& bias() const { return bias_; }

  /// Attention of one query q (head_dim() floats): p receives the tokens() weights,
  /// o the head_dim() outputs (doubles); ws provides the scratch. Returns what the
  /// kernel saw (non-finite scores or output).
  query_status run(const float* q, double* p, double* o, workspace& ws) const { return run_prefix(q, tokens(), p, o, ws); }
  /// The same over the first `keys` tokens only (2 to tokens(); a causal query at
  /// position keys - 1): p receives `keys` weights. Throws std::invalid_argument for
  /// another key count.
  query_status run_prefix(const float* q, std::size_t keys, double* p, double* o, workspace& ws) const {
    detail::check_prefix("kvq::attention::reference_attention::run_prefix", keys, tokens());
    const std::size_t d = head_dim();
    double* acc = workspace::get(ws.d0, pv_scratch(keys, d));
    double* tmp = workspace::get(ws.d1, d);
    return reference_query(q, detail::view_prefix(K_, keys), detail::view_prefix(V_, keys), p, o, acc, tmp,
                           detail::bias_ptr(bias_));
  }

  /// run_prefix of n_q queries at once, the same bits as n_q calls
  /// (reference_query_batch: K and V read once per group of queries). Query v is row v
  /// of Q (Q + v * q_stride) and attends to the first keys[v] tokens; its weights go to
  /// p + v * p_stride, its outputs to o + v * o_stride, its status to st[v]. Scratch:
  /// query_group * tokens() doubles of scores and as many P.V accumulators. Throws
  /// std::invalid_argument as storage_attention::run_prefix_batch.
  void run_prefix_batch(const float* Q, std::size_t q_stride, std::size_t n_q, const std::size_t* keys, double* p,
                        std::size_t p_stride, double* o, std::size_t o_stride, query_status* st,
                        workspace& ws) const {
    const std::size_t d = head_dim();
    detail::check_batch("kvq::attention::reference_attention::run_prefix_batch", n_q, keys, tokens(), p_stride,
                        o_stride, d);
    detail::for_each_query_group(n_q, keys, [&](std::size_t v0, std::size_t g, std::size_t n) {
      double* s = workspace::get(ws.d0, g * n + g * pv_scratch(n, d) + d);
      reference_query_batch(Q + v0 * q_stride, q_stride, g, keys + v0, detail::view_prefix(K_, n),
                            detail::view_prefix(V_, n), p + v0 * p_stride, p_stride, o + v0 * o_stride, o_stride,
                            st + v0, s, s + g * n, s + g * n + g * pv_scratch(n, d), detail::bias_ptr(bias_));
    });
  }

  /// Queries run_prefix_batch scores per pass over K and V.
  static constexpr std::size_t query_group = detail::batch_query_group;

 private:
  matrix_f K_, V_;
  std::vector<float> bias_;
};

// ---------------------------------------------------------------------------

/// Options of storage_attention.
struct storage_options {
  /// Quantize-dequantize transforms of K and V (empty callables: full-precision storage).
  kv_codec codec;              // empty callables: full-precision storage
  /// Round q, K, V, P and o to bf16 (the FlashAttention-2 bf16 kernel order, see
  /// storage_query) instead of fp32 math.
  bool bf16_math = false;      // round q, K, V, P, o to bf16 (FlashAttention-2 bf16 kernel order)
  /// Rotate the head dimension (hadamard_rotate) before the codec, and the output back;
  /// needs a power-of-two head_dim.
  bool hadamard = false;       // rotate the head dimension before the codec (and back after)
  /// Multiplier of q.k; 0 (the default): head_dim ** -0.5, computed in double and
  /// rounded to float as FlashAttention's Python front end does.
  float softmax_scale = 0.0f;  // 0: head_dim ** -0.5
  /// Quantize the query too (after the rotation, before the bf16 rounding): called with
  /// the query as a 1 x head_dim matrix, e.g. the codec's key transform for a KV-cache
  /// format also used for Q. Empty: q in full precision.
  kv_transform q_codec;
  /// Per-key score biases (one per token, natural units; empty: none), added in fp32 to
  /// fl(q.k * scale) and stored as given (not rounded to bf16 in bf16 mode: a compacted
  /// cache stores its biases in their own format, kvq::compact::beta_storage).
  std::vector<float> bias;
};

/// Storage-only emulation: K and V stored through a kv_codec (after an optional
/// Hadamard rotation), then fp32 or bf16 attention math (storage_query).
class storage_attention {
 public:
  /// Rotates, quantizes (codec) and, with bf16_math, rounds K and V once. Throws
  /// std::invalid_argument for the shape and bias errors of reference_attention, a
  /// non-power-of-two head_dim with hadamard, or a codec that changes a shape.
  storage_attention(const matrix_f& K, const matrix_f& V, storage_options opt) : opt_(std::move(opt)) {
    const char* where = "kvq::attention::storage_attention";
    detail::check_kv(where, K, V);
    detail::check_bias(where, opt_.bias, K);
    matrix_f k = stored(K, opt_.codec.k, "K", where);
    matrix_f v = stored(V, opt_.codec.v, "V", where);
    if (opt_.bf16_math) {
      for (Eigen::Index i = 0; i < k.size(); ++i) k.data()[i] = round_bf16(k.data()[i]);
      for (Eigen::Index i = 0; i < v.size(); ++i) v.data()[i] = round_bf16(v.data()[i]);
    }
    K_ = std::move(k);
    V_ = std::move(v);
    scale_ = opt_.softmax_scale > 0.0f ? opt_.softmax_scale : detail::default_softmax_scale(head_dim());
  }

  /// Replaces the keys with K, stored as the constructor stores them (rotation, codec,
  /// bf16), and keeps the stored values: the same object as constructing from (K, V)
  /// again, without storing V again (a study that varies only the keys). Throws
  /// std::invalid_argument for a K whose shape differs from V's, or as the constructor.
  void set_keys(const matrix_f& K) {
    const char* where = "kvq::attention::storage_attention::set_keys";
    detail::check_kv(where, K, V_);
    detail::check_bias(where, opt_.bias, K);
    matrix_f k = stored(K, opt_.codec.k, "K", where);
    if (opt_.bf16_math)
      for (Eigen::Index i = 0; i < k.size(); ++i) k.data()[i] = round_bf16(k.data()[i]);
    K_ = std::move(k);
  }

 private:
  // The rotated (with hadamard) and coded matrix. The codec reads the caller's matrix
  // directly when there is no rotation: copying it first only cost a pass over K or V.
  matrix_f stored(const matrix_f& in, const kv_transform& codec, const char* what, const char* where) const {
    if (!opt_.hadamard && !codec) return in;
    matrix_f rotated;
    if (opt_.hadamard) rotated = detail::hadamard_rows(in, where);
    const matrix_f& x = opt_.hadamard ? rotated : in;
    if (!codec) return rotated;
    matrix_f r = codec(x);
    detail::check_same_shape(where, what, x, r);
    return r;
  }

 public:
  /// Context length n (rows of K).
  std::size_t tokens() const { return static_cast<std::size_t>(K_.rows()); }
  /// Head dimension d (columns of K).
  std::size_t head_dim() const { return static_cast<std::size_t>(K_.cols()); }
  /// Name of the path for reports (codec, math, rotation, quantized Q, biases).
  std::string name() const {
    return "storage " + (opt_.codec.name.empty() ? std::string("custom") : opt_.codec.name) +
           (opt_.bf16_math ? ", bf16 math" : ", fp32 math") + (opt_.hadamard ? ", Hadamard" : "") +
           (opt_.q_codec ? ", quantized Q" : "") + (opt_.bias.empty() ? "" : ", key biases");
  }
  /// The stored keys (rotated, dequantized; tokens x head_dim).
  const matrix_f& keys() const { return K_; }
  /// The stored values (rotated, dequantized; tokens x head_dim).
  const matrix_f& values() const { return V_; }

  /// Attention of one query q (head_dim() floats, original basis): p receives the
  /// tokens() effective weights (doubles), o the head_dim() outputs (floats, rotated
  /// back). Throws std::invalid_argument if q_codec changes the query's shape.
  query_status run(const float* q, double* p, float* o, workspace& ws) const { return run_prefix(q, tokens(), p, o, ws); }
  /// The same over the first `keys` tokens only (2 to tokens(); a causal query at
  /// position keys - 1): p receives `keys` weights. Throws std::invalid_argument for
  /// another key count.
  query_status run_prefix(const float* q, std::size_t keys, double* p, float* o, workspace& ws) const {
    detail::check_prefix("kvq::attention::storage_attention::run_prefix", keys, tokens());
    const std::size_t n = keys, d = head_dim();
    float* qq = workspace::get(ws.q, d);
    prepare_query(q, qq);
    float* s = workspace::get(ws.f0, n);
    float* acc = workspace::get(ws.f1, pv_scratch(n, d));
    float* tmp = workspace::get(ws.f2, d);
    const query_status st =
        storage_query(qq, detail::view_prefix(K_, n), detail::view_prefix(V_, n), scale_, opt_.bf16_math, p, o, s, acc, tmp,
                      detail::bias_ptr(opt_.bias));
    if (opt_.hadamard) hadamard_rotate(o, d);  // H/sqrt(d) is its own inverse
    return st;
  }

  /// run_prefix of n_q queries at once, the same bits as n_q calls (storage_query_batch:
  /// K and V are read once per group of queries instead of once per query). Query v is
  /// row v of Q (Q + v * q_stride, head_dim() floats) and attends to the first keys[v]
  /// tokens; its weights go to p + v * p_stride, its outputs to o + v * o_stride, its
  /// status to st[v]. Scratch grows with the group (up to query_group queries):
  /// query_group * tokens() floats of scores and as many P.V accumulators. Throws
  /// std::invalid_argument for a key count outside 2..tokens(), a p_stride below a
  /// query's key count, an o_stride below head_dim(), or a q_codec that changes the
  /// query's shape.
  void run_prefix_batch(const float* Q, std::size_t q_stride, std::size_t n_q, const std::size_t* keys, double* p,
                        std::size_t p_stride, float* o, std::size_t o_stride, query_status* st,
                        workspace& ws) const {
    const std::size_t d = head_dim();
    detail::check_batch("kvq::attention::storage_attention::run_prefix_batch", n_q, keys, tokens(), p_stride,
                        o_stride, d);
    detail::for_each_query_group(n_q, keys, [&](std::size_t v0, std::size_t g, std::size_t n) {
      float* qq = workspace::get(ws.q, g * d);
      for (std::size_t v = 0; v < g; ++v) prepare_query(Q + (v0 + v) * q_stride, qq + v * d);
      float* s = workspace::get(ws.f0, g * n);
      float* acc = workspace::get(ws.f1, g * pv_scratch(n, d));
      float* tmp = workspace::get(ws.f2, d + g);
      storage_query_batch(qq, d, g, keys + v0, detail::view_prefix(K_, n), detail::view_prefix(V_, n), scale_,
                          opt_.bf16_math, p + v0 * p_stride, p_stride, o + v0 * o_stride, o_stride, st + v0, s, acc,
                          tmp + g, tmp, detail::bias_ptr(opt_.bias));
      if (opt_.hadamard)
        for (std::size_t v = v0; v < v0 + g; ++v) hadamard_rotate(o + v * o_stride, d);
    });
  }

  /// Queries run_prefix_batch scores per pass over K and V.
  static constexpr std::size_t query_group = detail::batch_query_group;

 private:
  // The query as the kernels see it: rotated (hadamard), quantized (q_codec) and rounded
  // to bf16 (bf16_math), in that order; qq: head_dim() floats.
  void prepare_query(const float* q, float* qq) const {
    const std::size_t d = head_dim();
    for (std::size_t j = 0; j < d; ++j) qq[j] = q[j];
    if (opt_.hadamard) hadamard_rotate(qq, d);
    if (opt_.q_codec) {
      matrix_f m(1, static_cast<Eigen::Index>(d));
      for (std::size_t j = 0; j < d; ++j) m(0, static_cast<Eigen::Index>(j)) = qq[j];
      const matrix_f r = opt_.q_codec(m);
      if (r.rows() != 1 || r.cols() != static_cast<Eigen::Index>(d))
        kvq::detail::fail("kvq::attention::storage_attention::run",
                          "q_codec returned " + kvq::detail::shape_of("a matrix", r) + " for a 1 x " +
                              std::to_string(d) + " query");
      for (std::size_t j = 0; j < d; ++j) qq[j] = r(0, static_cast<Eigen::Index>(j));
    }
    if (opt_.bf16_math)
      for (std::size_t j = 0; j < d; ++j) qq[j] = round_bf16(qq[j]);
  }

  storage_options opt_;
  matrix_f K_, V_;
  float scale_ = 1.0f;
};

// ---------------------------------------------------------------------------

/// Options of fa3_fp8_attention (FlashAttention-3's FP8 forward).
struct fa3_options {
  /// \var q_descale
  /// Descale of Q: the kernel sees fp8(q / q_descale); > 0.
  /// \var k_descale
  /// Per-tensor descale of K: x_fp8 = fp8(x / k_descale); > 0, and 1 when
  /// k_block_descale is given.
  /// \var v_descale
  /// Per-tensor descale of V: x_fp8 = fp8(x / v_descale); > 0, and 1 when
  /// v_block_descale is given.
  float q_descale = 1.0f, k_descale = 1.0f, v_descale = 1.0f;  // x_fp8 = fp8(x / descale)
  /// Softmax scale; 0: head_dim ** -0.5 (double, rounded to float, as FlashAttention's
  /// Python front end computes it).
  float softmax_scale = 0.0f;   // 0: head_dim ** -0.5
  /// P is scaled by 2^max_offset before the FP8 cast: 8 (FA3's FP8 path, P in [0, 256])
  /// or 0 (P in [0, 1]).
  int max_offset = 8;           // P scaled by S = 2^max_offset before the FP8 cast (8 or 0)
  /// KV tile length kBlockN in tokens (> 0); fa3_fp8_block_n(head_dim) is FA3's own choice.
  std::size_t block_n = 128;    // kBlockN (fa3_fp8_block_n(head_dim) is FA3's own choice)
  /// true: FA3's order, last KV block first; false: first to last.
  bool reverse = true;          // FA3 order: last KV block first
  /// Rotate the head dimension of Q, K and V before the FP8 cast (power-of-two head_dim)
  /// and the output back.
  bool hadamard = false;        // rotate the head dimension of Q, K, V before the cast
  /// With hadamard: also flip signs by a random ±1 diagonal first (FA3 paper's incoherent
  /// processing, signed_hadamard_rotate with hadamard_signs(hadamard_seed)). false keeps
  /// the plain rotation.
  bool random_signs = false;
  /// Philox seed of the random signs (hadamard_signs).
  std::uint64_t hadamard_seed = 0;
  /// Accumulation model of q.k and P8.V (fa3_config): ideal fp32 (default, the bits of
  /// the plain path) or the tensor-core block-FMA model of `mma_arch`, optionally promoted
  /// to fp32 every N tensor-core steps (0: never).
  fa3_accumulation accumulation = fa3_accumulation::ideal_fp32;
  /// Architecture whose fp8 tensor-core preset (kvq::mma::find_preset) models the
  /// accumulation in tensor_core mode; fp8 needs sm_89 or later.
  kvq::mma::arch mma_arch = kvq::mma::arch::sm_90;
  /// Tensor-core mode: add the P.V accumulator into fp32 every N steps (0: never).
  std::size_t pv_promote_every = 0;
  /// Tensor-core mode: add the q.k accumulator into fp32 every N steps (0: never).
  std::size_t qk_promote_every = 0;
  /// \var k_block_descale
  /// Per-block descales of K, one per KV block of block_n rows (block_descales\<F\>(K,
  /// block_n) computes FA3's amax / 448 ones), finite and > 0; empty: the per-tensor
  /// k_descale. Giving them requires k_descale to be 1.
  /// \var v_block_descale
  /// Per-block descales of V, likewise; empty: the per-tensor v_descale. Giving them
  /// requires v_descale to be 1.
  std::vector<float> k_block_descale, v_block_descale;
  /// Per-key score biases (one per token, natural units: s = q.k * softmax_scale + beta;
  /// empty: none). The kernel adds them to the raw fp32 score S = q8.k8 (after any
  /// per-block K descale) as b_t = fl(beta_t / fl(softmax_scale * fl(q_descale *
  /// k_descale))), FlashAttention-2's placement of ALiBi (slope / scale_softmax added to
  /// the unscaled scores): the max, rescale and exp2 with log2(e) folded into
  /// scale_log2 see a biased score and nothing else changes.
  std::vector<float> bias;
};

/// FlashAttention-3's FP8 forward over one head (fa3_query): K and V are (optionally
/// rotated and) quantized to F once, with per-tensor or per-block descales; each query
/// is rotated, quantized with its descale and run through fa3_query.
/// \tparam F FP8 element format of Q, K, V and P (kvq::fmt::e4m3 or kvq::fmt::e5m2).
/// \tparam Exp2 the exp2 model (exp2_ieee, or a model of ex2.approx.ftz.f32).
template <class F = kvq::fmt::e4m3, class Exp2 = exp2_ieee>
class fa3_fp8_attention {
 public:
  /// Prepares K, V and the kernel configuration. Throws std::invalid_argument for the
  /// shape and bias errors of reference_attention, block_n = 0, a descale that is not
  /// > 0, per-block descales of the wrong count, not finite and > 0, or given with a
  /// per-tensor factor != 1, random_signs without hadamard, hadamard with a
  /// non-power-of-two head_dim, or tensor_core mode without an fp8 preset for mma_arch.
  fa3_fp8_attention(const matrix_f& K, const matrix_f& V, const fa3_options& opt, Exp2 exp2 = Exp2{})
      : opt_(opt), exp2_(exp2) {
    const char* where = "kvq::attention::fa3_fp8_attention";
    detail::check_kv(where, K, V);
    if (opt.block_n == 0) kvq::detail::fail(where, "block_n = 0");
    if (!(opt.q_descale > 0.0f) || !(opt.k_descale > 0.0f) || !(opt.v_descale > 0.0f))
      kvq::detail::fail(where, "descale factors must be > 0");
    const std::size_t nb = (static_cast<std::size_t>(K.rows()) + opt.block_n - 1) / opt.block_n;
    check_block_descales(where, "k_block_descale", opt.k_block_descale, opt.k_descale, nb);
    check_block_descales(where, "v_block_descale", opt.v_block_descale, opt.v_descale, nb);
    detail::check_bias(where, opt.bias, K);
    if (opt.random_signs && !opt.hadamard) kvq::detail::fail(where, "random_signs needs hadamard = true");
    if (opt.hadamard && !is_pow2(static_cast<std::size_t>(K.cols())))
      kvq::detail::fail(where, "Hadamard rotation needs a power-of-two head_dim, got " + std::to_string(K.cols()));
    if (opt.random_signs) {
      signs_.resize(static_cast<std::size_t>(K.cols()));
      hadamard_signs(opt.hadamard_seed, signs_.data(), signs_.size());
    }
    K_ = quantize(rotate_rows(K, where), opt.k_descale, opt.k_block_descale);
    V_ = quantize(rotate_rows(V, where), opt.v_descale, opt.v_block_descale);
    const float sm = opt.softmax_scale > 0.0f ? opt.softmax_scale : detail::default_softmax_scale(head_dim());
    // flash_api.cpp: softmax_scale_log2 = softmax_scale * M_LOG2E (double product stored
    // as float); the FP8 kernel multiplies it by q_descale * k_descale.
    sl2_base_ = static_cast<float>(static_cast<double>(sm) * math::detail::inv_ln2_hi);
    sm_ = sm;
    raw_bias_ = raw_bias_for(opt.q_descale);
    cfg_.scale_log2 = scale_log2_for(opt.q_descale);
    cfg_.v_descale = opt.v_descale;
    cfg_.max_offset = static_cast<float>(opt.max_offset);
    cfg_.block_n = opt.block_n;
    cfg_.reverse = opt.reverse;
    cfg_.accumulation = opt.accumulation;
    if (opt.accumulation == fa3_accumulation::tensor_core) {
      kvq::mma::preset_info pi{};
      if (!kvq::mma::find_preset(opt.mma_arch, fa3_mma_input<F>::value, kvq::mma::output_format::fp32, pi))
        kvq::detail::fail(where, "no fp8 tensor-core preset for this arch (fp8 needs sm_89 or later)");
      cfg_.mma = pi.params;
    }
    cfg_.pv_promote_every = opt.pv_promote_every;
    cfg_.qk_promote_every = opt.qk_promote_every;
    cfg_.k_block_descale = opt_.k_block_descale.empty() ? nullptr : opt_.k_block_descale.data();
    cfg_.v_block_descale = opt_.v_block_descale.empty() ? nullptr : opt_.v_block_descale.data();
    cfg_.score_bias = raw_bias_.empty() ? nullptr : raw_bias_.data();
  }
  /// cfg_ points into opt_'s descale vectors and raw_bias_: copies re-point it (moves copy).
  fa3_fp8_attention(const fa3_fp8_attention& o) : opt_(o.opt_), exp2_(o.exp2_), cfg_(o.cfg_), sl2_base_(o.sl2_base_),
                                                  sm_(o.sm_), raw_bias_(o.raw_bias_), signs_(o.signs_), K_(o.K_),
                                                  V_(o.V_) { rebind(); }
  /// Copy assignment; re-points the configuration like the copy constructor.
  fa3_fp8_attention& operator=(const fa3_fp8_attention& o) {
    if (this != &o) {
      opt_ = o.opt_; exp2_ = o.exp2_; cfg_ = o.cfg_; sl2_base_ = o.sl2_base_; sm_ = o.sm_; raw_bias_ = o.raw_bias_;
      signs_ = o.signs_; K_ = o.K_; V_ = o.V_;
      rebind();
    }
    return *this;
  }

  /// Context length n (rows of K).
  std::size_t tokens() const { return static_cast<std::size_t>(K_.rows()); }
  /// Head dimension d (columns of K).
  std::size_t head_dim() const { return static_cast<std::size_t>(K_.cols()); }
  /// Name of the path for reports (format, S, block, order, rotation, descales, biases,
  /// accumulation).
  std::string name() const {
    std::string acc;
    if (opt_.accumulation == fa3_accumulation::tensor_core) {
      acc = std::string(", ") + kvq::mma::name(opt_.mma_arch) + " tensor core";
      if (opt_.pv_promote_every != 0) acc += ", promote every " + std::to_string(opt_.pv_promote_every);
    }
    return std::string("FA3 ") + kvq::format_name<F>() + " (S=2^" + std::to_string(opt_.max_offset) + ", block " +
           std::to_string(opt_.block_n) + (opt_.reverse ? ", reverse" : ", forward") +
           (opt_.hadamard ? (opt_.random_signs ? ", random-sign Hadamard" : ", Hadamard") : "") +
           (opt_.k_block_descale.empty() && opt_.v_block_descale.empty() ? "" : ", per-block descale") +
           (opt_.bias.empty() ? "" : ", key biases") + acc + ")";
  }
  /// The kernel configuration of a query with the options' q_descale.
  const fa3_config& config() const { return cfg_; }
  /// The FP8 keys (decoded, exact; tokens x head_dim), in the rotated basis when
  /// hadamard is on.
  const matrix_f& keys() const { return K_; }
  /// The FP8 values (decoded, exact; tokens x head_dim), in the rotated basis when
  /// hadamard is on.
  const matrix_f& values() const { return V_; }

  /// Attention of one query q (head_dim() floats, original basis) with the options'
  /// q_descale: p receives the tokens() effective weights (doubles), o the head_dim()
  /// outputs (floats, rotated back).
  query_status run(const float* q, double* p, float* o, workspace& ws) const {
    return run_with(q, tokens(), p, o, ws, opt_.q_descale, cfg_);
  }
  /// The same over the first `keys` tokens only (2 to tokens(); a causal query at
  /// position keys - 1): p receives `keys` weights; the KV blocks are those of the
  /// prefix, its last one partial. Throws std::invalid_argument for another key count.
  query_status run_prefix(const float* q, std::size_t keys, double* p, float* o, workspace& ws) const {
    detail::check_prefix("kvq::attention::fa3_fp8_attention::run_prefix", keys, tokens());
    return run_with(q, keys, p, o, ws, opt_.q_descale, cfg_);
  }
  /// The same with this query's own descale (per-block Q quantization: the descale of
  /// the block of query rows q belongs to, e.g. from block_descales<F>(Q, rows)).
  /// Throws std::invalid_argument if q_descale is not > 0.
  query_status run(const float* q, double* p, float* o, workspace& ws, float q_descale) const {
    if (!(q_descale > 0.0f)) kvq::detail::fail("kvq::attention::fa3_fp8_attention::run", "q_descale must be > 0");
    fa3_config c = cfg_;
    c.scale_log2 = scale_log2_for(q_descale);
    if (!opt_.bias.empty() && q_descale != opt_.q_descale) {
      // The raw-score units of the biases depend on the query's descale.
      const std::vector<float> b = raw_bias_for(q_descale);
      float* rb = workspace::get(ws.f1, b.size());
      for (std::size_t t = 0; t < b.size(); ++t) rb[t] = b[t];
      c.score_bias = rb;
    }
    return run_with(q, tokens(), p, o, ws, q_descale, c);
  }

 private:
  query_status run_with(const float* q, std::size_t n, double* p, float* o, workspace& ws, float q_descale,
                        const fa3_config& c) const {
    const std::size_t d = head_dim();
    float* qq = workspace::get(ws.q, d);
    for (std::size_t j = 0; j < d; ++j) qq[j] = q[j];
    if (opt_.hadamard) {
      if (opt_.random_signs) signed_hadamard_rotate(qq, signs_.data(), d);
      else hadamard_rotate(qq, d);
    }
    for (std::size_t j = 0; j < d; ++j) qq[j] = kvq::decode<F>(kvq::encode<F>(qq[j] / q_descale));
    float* scratch = workspace::get(ws.f0, fa3_scratch(n, d, c.block_n));
    const query_status st = fa3_query<F>(qq, detail::view_prefix(K_, n), detail::view_prefix(V_, n), c, p, o, scratch, exp2_);
    if (opt_.hadamard) {
      if (opt_.random_signs) signed_hadamard_unrotate(o, signs_.data(), d);
      else hadamard_rotate(o, d);
    }
    return st;
  }
  float scale_log2_for(float q_descale) const {
    const float kd = opt_.k_descale;
    float sl2 = sl2_base_;
    if (q_descale != 1.0f || kd != 1.0f) sl2 = sl2 * (q_descale * kd);
    return sl2;
  }
  // beta / (softmax_scale * q_descale * k_descale) in fp32: the biases in units of the raw
  // score the kernel forms (empty without biases).
  std::vector<float> raw_bias_for(float q_descale) const {
    std::vector<float> r(opt_.bias.size());
    const float kd = opt_.k_descale;
    float unit = sm_;
    if (q_descale != 1.0f || kd != 1.0f) unit = sm_ * (q_descale * kd);
    for (std::size_t t = 0; t < r.size(); ++t) r[t] = opt_.bias[t] / unit;
    return r;
  }
  void rebind() {
    cfg_.k_block_descale = opt_.k_block_descale.empty() ? nullptr : opt_.k_block_descale.data();
    cfg_.v_block_descale = opt_.v_block_descale.empty() ? nullptr : opt_.v_block_descale.data();
    cfg_.score_bias = raw_bias_.empty() ? nullptr : raw_bias_.data();
  }
  static void check_block_descales(const char* where, const char* what, const std::vector<float>& v, float tensor,
                                   std::size_t nb) {
    if (v.empty()) return;
    if (v.size() != nb)
      kvq::detail::fail(where, std::string(what) + " has " + std::to_string(v.size()) + " entries, the context has " +
                                   std::to_string(nb) + " KV blocks");
    if (tensor != 1.0f) kvq::detail::fail(where, std::string(what) + " given together with a per-tensor descale != 1");
    for (float x : v)
      if (!(x > 0.0f) || !(x < 3.0e38f)) kvq::detail::fail(where, std::string(what) + " entries must be finite and > 0");
  }
  matrix_f rotate_rows(const matrix_f& m, const char* where) const {
    if (!opt_.hadamard) return m;
    if (!opt_.random_signs) return detail::hadamard_rows(m, where);
    matrix_f r = m;
    for (Eigen::Index i = 0; i < r.rows(); ++i) signed_hadamard_rotate(&r(i, 0), signs_.data(), signs_.size());
    return r;
  }
  matrix_f quantize(const matrix_f& m, float descale, const std::vector<float>& block) const {
    matrix_f r(m.rows(), m.cols());
    if (block.empty()) {
      for (Eigen::Index i = 0; i < m.size(); ++i) r.data()[i] = kvq::decode<F>(kvq::encode<F>(m.data()[i] / descale));
      return r;
    }
    for (Eigen::Index i = 0; i < m.rows(); ++i) {
      const float ds = block[static_cast<std::size_t>(i) / opt_.block_n];
      for (Eigen::Index j = 0; j < m.cols(); ++j) r(i, j) = kvq::decode<F>(kvq::encode<F>(m(i, j) / ds));
    }
    return r;
  }
  fa3_options opt_;
  Exp2 exp2_;
  fa3_config cfg_;
  float sl2_base_ = 0.0f;
  float sm_ = 1.0f;                 // softmax_scale
  std::vector<float> raw_bias_;     // bias in raw-score units for opt_.q_descale
  std::vector<float> signs_;
  matrix_f K_, V_;
};

}  // namespace attention
}  // namespace kvq
