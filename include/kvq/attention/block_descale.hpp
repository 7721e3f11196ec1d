/// \file
/// kvq/attention/block_descale.hpp — descale factors of FP8 block quantization: one factor
/// per block of consecutive rows, descale = amax(block) / max_finite(F), so that the
/// block's largest magnitude maps onto the format's largest finite value (the per-block
/// quantization of the FlashAttention-3 paper, Shah et al. 2024, §3.3; per-tensor is the
/// special case of one block). A block of zeros (or a non-finite amax) gets descale 1.
#pragma once

#include <cmath>
#include <cstddef>
#include <string>
#include <vector>

#include <kvq/core/error.hpp>
#include <kvq/core/matrix.hpp>
#include <kvq/format/traits.hpp>

namespace kvq {
namespace attention {

/// One descale per block of rows_per_block consecutive rows of m (the last block may be
/// shorter): float(double(amax) / max_finite(F)), or 1 for a block whose amax is 0 or not
/// finite.
/// \throws std::invalid_argument if rows_per_block = 0.
template <class F>
std::vector<float> block_descales(const matrix_f& m, std::size_t rows_per_block) {
  if (rows_per_block == 0) kvq::detail::fail("kvq::attention::block_descales", "rows_per_block = 0");
  const std::size_t rows = static_cast<std::size_t>(m.rows());
  const std::size_t nb = (rows + rows_per_block - 1) / rows_per_block;
  std::vector<float> out(nb, 1.0f);
  const double fmax = kvq::max_finite_v<F>;
  for (std::size_t b = 0; b < nb; ++b) {
    float amax = 0.0f;
    const std::size_t r1 = (b + 1) * rows_per_block < rows ? (b + 1) * rows_per_block : rows;
    for (std::size_t r = b * rows_per_block; r < r1; ++r)
      for (Eigen::Index j = 0; j < m.cols(); ++j) {
        const float a = std::fabs(m(static_cast<Eigen::Index>(r), j));
        if (a > amax) amax = a;
      }
    if (amax > 0.0f && std::isfinite(amax)) out[b] = static_cast<float>(static_cast<double>(amax) / fmax);
  }
  return out;
}

}  // namespace attention
}  // namespace kvq
