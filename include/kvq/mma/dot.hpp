/// \file
/// kvq/mma/dot.hpp — an inner product longer than one hardware step: consecutive blocks of
/// p.k products, d of each block being c of the next (how an MMA instruction sequence
/// over K accumulates, and how the recorded sm_89 / sm_80 K = 16, 32 lines were produced).
#pragma once

#include <kvq/config.hpp>
#include <kvq/mma/block_fma.hpp>
#include <kvq/mma/params.hpp>

namespace kvq::mma {

/// d = a[0..K) · b[0..K) + c. A last partial block acts as if padded with zero products.
/// Blocks longer than max_block are not supported (p.k <= max_block).
KVQ_HD inline float dot(const block_fma_params& p, input_format in, const float* a, const float* b, int K,
                        float c) noexcept {
  float acc = c;
  for (int i = 0; i < K; i += p.k) {
    const int n = K - i < p.k ? K - i : p.k;
    acc = block_fma(p, in, a + i, b + i, n, acc);
  }
  if (K <= 0) acc = block_fma(p, in, a, b, 0, c);  // d = c rounded as the hardware stores it
  return acc;
}

}  // namespace kvq::mma
