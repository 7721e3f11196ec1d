/// \file
/// kvq/inject/rope.hpp — rotary position embedding (RoPE, Su et al. 2021) for keys and
/// queries, with a chosen base (10^4 for Llama-2, 5*10^5 for Llama-3, ...).
///
/// The float32 recipe of Hugging Face transformers (modeling_rope_utils.py,
/// _compute_default_rope_parameters and LlamaRotaryEmbedding), with kvq's own pow/cos/sin:
///   inv_freq[i] = 1.0f / pow(base, float(2i) / float(rotary_dim))    i < rotary_dim / 2
///     (pow evaluated as exp(e * log(base)) in double and rounded once to float)
///   angle       = float(position) * inv_freq[i]                     (float product)
///   c, s        = kvq::math::cos(angle), kvq::math::sin(angle)      (float, <= 1 ulp)
///   (x, y)     -> (x*c - y*s, y*c + x*s)                             (float, no fma)
/// Pairs: style::half pairs channel i with i + rotary_dim/2 (Llama/NeoX "rotate_half");
/// style::interleaved pairs 2i with 2i+1 (GPT-J). Channels >= rotary_dim are untouched
/// (partial rotary).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <kvq/core/parallel.hpp>
#include <vector>

#include <kvq/config.hpp>
#include <kvq/core/math.hpp>
#include <kvq/core/math_array.hpp>
#include <kvq/inject/rope_row.hpp>
#include <kvq/core/error.hpp>
#include <kvq/core/matrix.hpp>

namespace kvq {
namespace inject {

/// What apply_rope did (kept in the scenario records).
struct rope_record {
  /// RoPE base used.
  double base = 0.0;
  /// Channel pairing used.
  rope_style style = rope_style::half;
  /// Number of rotated channels actually used (rope_config::rotary_dim resolved).
  std::size_t rotary_dim = 0;
  /// inv_freq[i] of each pair i < rotary_dim / 2, as applied.
  std::vector<float> inv_freq;
};

/// inv_freq of every pair i < rotary_dim / 2 (rope_inv_freq() with base rounded to float).
inline std::vector<float> rope_inv_freqs(std::size_t rotary_dim, double base) {
  std::vector<float> f(rotary_dim / 2);
  for (std::size_t i = 0; i < f.size(); ++i) f[i] = rope_inv_freq(i, rotary_dim, static_cast<float>(base));
  return f;
}

/// The rotary dimension c would use on m (rotary_dim, or m.cols() when 0).
/// \throws std::invalid_argument if it is 0, odd or greater than m.cols(), or if
///         c.base is not > 1.
inline std::size_t checked_rotary_dim(const matrix_f& m, const rope_config& c) {
  const std::size_t d = static_cast<std::size_t>(m.cols());
  const std::size_t r = c.rotary_dim == 0 ? d : c.rotary_dim;
  if (r == 0 || r % 2 != 0 || r > d)
    kvq::detail::fail("kvq::inject::apply_rope",
                 "rotary_dim " + std::to_string(r) + " must be even, positive and <= head_dim " + std::to_string(d));
  if (!(c.base > 1.0)) kvq::detail::fail("kvq::inject::apply_rope", "base must be > 1");
  return r;
}

/// Rotates row r of m for position positions[r].
/// `threads` splits the rows; the values do not depend on it.
/// \throws std::invalid_argument if the rotary dimension is invalid (checked_rotary_dim())
///         or positions.size() != m.rows().
inline rope_record apply_rope(matrix_f& m, const std::vector<std::size_t>& positions, const rope_config& c,
                              unsigned threads = 1) {
  const std::size_t r = checked_rotary_dim(m, c);
  if (positions.size() != static_cast<std::size_t>(m.rows()))
    kvq::detail::fail("kvq::inject::apply_rope", kvq::detail::shape_of("matrix", m) + " but " +
                                                std::to_string(positions.size()) + " positions given");
  rope_record rec{c.base, c.style, r, rope_inv_freqs(r, c.base)};
  const std::size_t rows = static_cast<std::size_t>(m.rows()), cols = static_cast<std::size_t>(m.cols());
  // rope_rotate_row per row, with the row's sines and cosines from math::sincos_n (the
  // bits of math::sincos, several pairs per instruction).
  auto work = [&](std::size_t r0, std::size_t r1) {
    const std::size_t half = r / 2;
    std::vector<float> buf(3 * half);
    float* angle = buf.data();
    float* sn = angle + half;
    float* cs = sn + half;
    for (std::size_t i = r0; i < r1; ++i) {
      for (std::size_t k = 0; k < half; ++k) angle[k] = rope_angle(positions[i], rec.inv_freq[k]);
      math::sincos_n(angle, sn, cs, half);
      float* x = m.data() + i * cols;
      for (std::size_t k = 0; k < half; ++k) rope_rotate_pair(x, r, k, sn[k], cs[k], c.style);
    }
  };
  kvq::detail::parallel_chunks("kvq::inject::apply_rope", rows, threads == 0 ? 1u : threads, 1, work);
  return rec;
}

/// Rotates row r of m for position first_position + r (keys: first_position = 0).
/// \throws std::invalid_argument as the position-list overload.
inline rope_record apply_rope(matrix_f& m, std::size_t first_position, const rope_config& c, unsigned threads = 1) {
  std::vector<std::size_t> pos(static_cast<std::size_t>(m.rows()));
  for (std::size_t i = 0; i < pos.size(); ++i) pos[i] = first_position + i;
  return apply_rope(m, pos, c, threads);
}

}  // namespace inject
}  // namespace kvq
