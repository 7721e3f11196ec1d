// kvq/attention/hadamard.hpp — the normalised Walsh–Hadamard rotation of the head
// dimension (incoherent processing: QuaRot, Ashkboos et al. 2024; QuIP#), which spreads
// a channel outlier over all channels before quantization.
//
// H_d / sqrt(d) (d a power of two) is symmetric and orthogonal, so rotating q and k
// leaves q.k unchanged in exact arithmetic, and rotating V and then the output with the
// same transform leaves P V unchanged.
//
// Fixed operation order (the bits depend on it):
//   for h = 1, 2, 4, ..., d/2:  for each i with (i & h) == 0, ascending:
//       (x[i], x[i + h]) <- (x[i] + x[i + h], x[i] - x[i + h])
//   then every element is multiplied by s = float(1 / sqrt(d)) (an exact power of two
//   when d is a power of four).
#pragma once

#include <cstddef>

#include <kvq/config.hpp>
#include <kvq/core/math.hpp>

namespace kvq {
namespace attention {

KVQ_HD constexpr bool is_pow2(std::size_t d) { return d != 0 && (d & (d - 1)) == 0; }

/// float(1 / sqrt(d)) (division and square root in double, rounded once).
KVQ_HD inline float hadamard_scale(std::size_t d) {
  return static_cast<float>(1.0 / math::sqrt(static_cast<double>(d)));
}

/// Unnormalised fast Walsh–Hadamard transform in place (d a power of two).
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
KVQ_HD inline void hadamard_rotate(float* x, std::size_t d) {
  fwht_unnormalized(x, d);
  const float s = hadamard_scale(d);
  for (std::size_t i = 0; i < d; ++i) x[i] = x[i] * s;
}

}  // namespace attention
}  // namespace kvq
