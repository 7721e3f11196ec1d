/// \file
/// kvq/attention/hadamard.hpp — the normalised Walsh–Hadamard rotation of the head
/// dimension (incoherent processing: QuaRot, Ashkboos et al. 2024; QuIP#), which spreads
/// a channel outlier over all channels before quantization.
///
/// H_d / sqrt(d) (d a power of two) is symmetric and orthogonal, so rotating q and k
/// leaves q.k unchanged in exact arithmetic, and rotating V and then the output with the
/// same transform leaves P V unchanged.
///
/// Random-sign variant (FlashAttention-3 paper, Shah et al. 2024, §3.3 "incoherent
/// processing"; QuIP#): x <- (H_d / sqrt(d)) D x with D = diag(±1) drawn from kvq's Philox
/// (seed, stream 0x4841444D "HADM", index i: bit 0 of word 0 set gives -1). H D is
/// orthogonal, so q.k is unchanged when q and k use the same signs, and D H undoes it.
///
/// Fixed operation order (the bits depend on it):
/// ~~~
///   for h = 1, 2, 4, ..., d/2:  for each i with (i & h) == 0, ascending:
///       (x[i], x[i + h]) <- (x[i] + x[i + h], x[i] - x[i + h])
///   then every element is multiplied by s = float(1 / sqrt(d)) (an exact power of two
///   when d is a power of four).
/// ~~~
#pragma once

#include <cstddef>
#include <cstdint>

#include <kvq/config.hpp>
#include <kvq/core/math.hpp>
#include <kvq/inject/philox.hpp>

namespace kvq {
namespace attention {

/// True if d is a power of two (d > 0).
KVQ_HD constexpr bool is_pow2(std::size_t d) { return d != 0 && (d & (d - 1)) == 0; }

/// float(1 / sqrt(d)) (division and square root in double, rounded once).
KVQ_HD inline float hadamard_scale(std::size_t d) {
  return static_cast<float>(1.0 / math::sqrt(static_cast<double>(d)));
}

/// Unnormalised fast Walsh–Hadamard transform in place (d a power of two), in the fixed
/// butterfly order of the file description, with T's own + and -.
template <class T>
KVQ_HD inline void fwht_unnormalized(T* x, std::size_t d) {
  for (std::size_t h = 1; h < d; h <<= 1) {
    for (std::size_t i = 0; i < d; ++i) {
      if (i & h) continue;
      const T a = x[i], b = x[i + h];
      x[i] = a + b;
      x[i + h] = a - b;
    }
  }
}

/// x <- (H_d / sqrt(d)) x in place (float).
/// One rounding per butterfly step and one per scaling; d must be a power of two.
KVQ_HD inline void hadamard_rotate(float* x, std::size_t d) {
  fwht_unnormalized(x, d);
  const float s = hadamard_scale(d);
  for (std::size_t i = 0; i < d; ++i) x[i] = x[i] * s;
}

/// The ±1 diagonal of the random-sign rotation for `seed` (d entries).
KVQ_HD inline void hadamard_signs(std::uint64_t seed, float* signs, std::size_t d) {
  for (std::size_t i = 0; i < d; ++i)
    signs[i] = (inject::philox_block(seed, 0x4841444Du, i).v[0] & 1u) != 0 ? -1.0f : 1.0f;
}

/// x <- (H_d / sqrt(d)) D x: sign flips (exact), then hadamard_rotate.
KVQ_HD inline void signed_hadamard_rotate(float* x, const float* signs, std::size_t d) {
  for (std::size_t i = 0; i < d; ++i) x[i] = x[i] * signs[i];
  hadamard_rotate(x, d);
}

/// The inverse: x <- D (H_d / sqrt(d)) x.
KVQ_HD inline void signed_hadamard_unrotate(float* x, const float* signs, std::size_t d) {
  hadamard_rotate(x, d);
  for (std::size_t i = 0; i < d; ++i) x[i] = x[i] * signs[i];
}

}  // namespace attention
}  // namespace kvq
