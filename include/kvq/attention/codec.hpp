// kvq/attention/codec.hpp — how a KV storage scheme plugs into the attention emulation.
//
// A kv_codec is a pair of callables, one for keys and one for values, each mapping a
// (tokens x head_dim) float matrix of one head to its quantize-then-dequantize image.
// Any block-scaled scheme, per-channel/per-token scheme or mixed-precision policy
// (e.g. a full-precision window of recent tokens) is such a function of the whole
// matrix; the attention layer never needs to know which. An empty callable is the
// identity (full-precision storage).
//
// A few element-wise codecs are provided for tests and simple studies: identity, bf16
// storage, and per-tensor FP8 with a fixed scale (x -> decode(encode(x / scale)) * scale,
// the vLLM KV-cache store with k_scale/v_scale). Block schemes live in kvq/block/.
#pragma once

#include <functional>
#include <string>

#include <kvq/attention/rounding.hpp>
#include <kvq/format/decode.hpp>
#include <kvq/format/encode.hpp>
#include <kvq/format/formats.hpp>
#include <kvq/format/policy.hpp>
#include <kvq/inject/types.hpp>

namespace kvq {
namespace attention {

using inject::matrix_d;
using inject::matrix_f;

/// Maps a (tokens x head_dim) K or V matrix to its dequantized version (same shape).
using kv_transform = std::function<matrix_f(const matrix_f&)>;

struct kv_codec {
  kv_transform k;    // empty: identity
  kv_transform v;    // empty: identity
  std::string name;  // for reports
};

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

template <class F>
kv_codec per_tensor_codec(float k_scale = 1.0f, float v_scale = 1.0f,
                          kvq::overflow o = kvq::overflow::satfinite) {
  return kv_codec{per_tensor_transform<F>(k_scale, o), per_tensor_transform<F>(v_scale, o),
                  std::string("per-tensor ") + kvq::format_name<F>()};
}

}  // namespace attention
}  // namespace kvq
