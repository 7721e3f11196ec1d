/// \file
/// kvq/attention/codec.hpp — how a KV storage scheme plugs into the attention emulation.
///
/// A kv_codec is a pair of callables, one for keys and one for values, each mapping a
/// (tokens x head_dim) float matrix of one head to its quantize-then-dequantize image.
/// Any block-scaled scheme, per-channel/per-token scheme or mixed-precision policy
/// (e.g. a full-precision window of recent tokens) is such a function of the whole
/// matrix; the attention layer never needs to know which. An empty callable is the
/// identity (full-precision storage).
///
/// codec_of(scheme) gives the codec of any scheme of the registry (kv/registry.hpp):
/// codec_of(kvq::kv::find_scheme("nvfp4_te")) stores K and V as NVFP4 exactly as the
/// studies, the caches and the verifier do. A few element-wise codecs are provided for
/// tests: identity, bf16 storage, and per-tensor FP8 with a fixed scale
/// (x -> decode(encode(x / scale)) * scale, the vLLM KV-cache store with k_scale/v_scale).
#pragma once

#include <functional>
#include <string>

#include <kvq/core/float16.hpp>
#include <kvq/format/decode.hpp>
#include <kvq/format/encode.hpp>
#include <kvq/format/formats.hpp>
#include <kvq/format/policy.hpp>
#include <kvq/core/error.hpp>
#include <kvq/core/matrix.hpp>
#include <kvq/kv/registry.hpp>

namespace kvq {
/// Attention in reference (double) and emulated precision: the kernels, the attention
/// variants and their driver, FlashAttention-3 FP8 tiles, and the pieces that plug KV
/// storage into them (codecs, Hadamard rotation, FP8 block descales).
namespace attention {

using kvq::matrix_d;
using kvq::matrix_f;

/// Maps a (tokens x head_dim) K or V matrix to its dequantized version (same shape).
using kv_transform = std::function<matrix_f(const matrix_f&)>;

/// A KV storage scheme as the attention emulation sees it: one transform for keys, one
/// for values (see the file description).
struct kv_codec {
  /// Round trip of a head's K (tokens x head_dim); empty: identity.
  kv_transform k;    // empty: identity
  /// Round trip of a head's V (tokens x head_dim); empty: identity.
  kv_transform v;    // empty: identity
  /// Name for reports.
  std::string name;  // for reports
};

/// Full-precision storage: both transforms empty, named "fp32".
inline kv_codec identity_codec() { return kv_codec{{}, {}, "fp32"}; }

/// bf16 storage: every element rounded to the nearest bfloat16.
inline kv_codec bf16_codec() {
  auto f = [](const matrix_f& m) {
    matrix_f r(m.rows(), m.cols());
    for (Eigen::Index i = 0; i < m.size(); ++i) r.data()[i] = round_bf16(m.data()[i]);
    return r;
  };
  return kv_codec{f, f, "bf16"};
}

/// Per-tensor FP8 (or any minifloat F): x -> decode(encode(x / scale, rn, o)) * scale.
/// Rounding is to nearest even; `scale` must be nonzero.
template <class F>
kv_transform per_tensor_transform(float scale = 1.0f, kvq::overflow o = kvq::overflow::satfinite) {
  return [scale, o](const matrix_f& m) {
    matrix_f r(m.rows(), m.cols());
    for (Eigen::Index i = 0; i < m.size(); ++i) {
      const float x = m.data()[i] / scale;
      r.data()[i] = kvq::decode<F>(kvq::encode<F>(x, kvq::rounding::nearest_even, o)) * scale;
    }
    return r;
  };
}

/// Per-tensor minifloat storage of K and V with their own scales (the vLLM KV-cache store
/// with k_scale / v_scale), named "per-tensor \<format\>".
template <class F>
kv_codec per_tensor_codec(float k_scale = 1.0f, float v_scale = 1.0f,
                          kvq::overflow o = kvq::overflow::satfinite) {
  return kv_codec{per_tensor_transform<F>(k_scale, o), per_tensor_transform<F>(v_scale, o),
                  std::string("per-tensor ") + kvq::format_name<F>()};
}

/// A registry scheme's round trip for one role, as a kv_transform. The scheme must outlive
/// the transform (registry schemes live for the whole program).
inline kv_transform transform_of(const kvq::kv::scheme& s, kvq::kv::kv_role role) {
  const kvq::kv::scheme* sp = &s;
  return [sp, role](const matrix_f& m) { return sp->round_trip_matrix(role, m); };
}

/// The codec of a registry scheme: keys and values through its round trip.
inline kv_codec codec_of(const kvq::kv::scheme& s) {
  return kv_codec{transform_of(s, kvq::kv::kv_role::key), transform_of(s, kvq::kv::kv_role::value), s.name};
}

/// The codec of the scheme with this name or alias (std::invalid_argument if unknown).
inline kv_codec codec_of(const std::string& scheme_name) { return codec_of(kvq::kv::find_scheme(scheme_name)); }

}  // namespace attention
}  // namespace kvq
