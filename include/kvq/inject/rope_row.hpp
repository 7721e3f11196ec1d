/// \file
/// kvq/inject/rope_row.hpp — the per-row RoPE arithmetic (host and device, no Eigen);
/// the recipe is documented in kvq/inject/rope.hpp.
#pragma once

#include <cstddef>

#include <kvq/config.hpp>
#include <kvq/core/math.hpp>

namespace kvq {
namespace inject {

/// How RoPE pairs channels: `half` pairs i with i + rotary_dim/2 (Llama/NeoX
/// "rotate_half"), `interleaved` pairs 2i with 2i+1 (GPT-J).
enum class rope_style { half, interleaved };

/// Parameters of a rotary position embedding.
struct rope_config {
  /// RoPE base theta (10^4 for Llama-2, 5*10^5 for Llama-3); must be > 1.
  double base = 10000.0;
  /// Channel pairing.
  rope_style style = rope_style::half;
  /// Number of rotated channels, even and <= head_dim; 0 means the whole head dimension.
  /// Channels >= rotary_dim are left untouched (partial rotary).
  std::size_t rotary_dim = 0;  // 0: the whole head dimension (must be even)
};

/// inv_freq[i] for pair i (float, as in the HF recipe).
KVQ_HD inline float rope_inv_freq(std::size_t pair, std::size_t rotary_dim, float base) {
  const float e = static_cast<float>(2 * pair) / static_cast<float>(rotary_dim);
  const double p = math::exp(static_cast<double>(e) * math::log(static_cast<double>(base)));
  return 1.0f / static_cast<float>(p);
}

/// Rotates the channel pair i of row x (of rotary_dim rotated channels) by the angle
/// whose sine and cosine are s and c.
KVQ_HD inline void rope_rotate_pair(float* x, std::size_t rotary_dim, std::size_t i, float s, float c,
                                    rope_style style) {
  const std::size_t half = rotary_dim / 2;
  const std::size_t a = style == rope_style::half ? i : 2 * i;
  const std::size_t b = style == rope_style::half ? i + half : 2 * i + 1;
  const float xa = x[a], xb = x[b];
  const float ca = xa * c, sb = xb * s, cb = xb * c, sa = xa * s;
  x[a] = ca - sb;
  x[b] = cb + sa;
}

/// The angle of pair i at `position`: float(position) * inv_freq[i], in float.
KVQ_HD inline float rope_angle(std::size_t position, float inv_freq) {
  return static_cast<float>(position) * inv_freq;
}

/// Rotates one row x[0..head_dim) for `position`, given inv_freq[0..rotary_dim/2).
KVQ_HD inline void rope_rotate_row(float* x, std::size_t rotary_dim, std::size_t position, const float* inv_freq,
                                   rope_style style) {
  const std::size_t half = rotary_dim / 2;
  for (std::size_t i = 0; i < half; ++i) {
    float s = 0.0f, c = 0.0f;
    math::sincos(rope_angle(position, inv_freq[i]), s, c);
    rope_rotate_pair(x, rotary_dim, i, s, c, style);
  }
}

}  // namespace inject
}  // namespace kvq
