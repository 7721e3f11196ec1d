/// \file
/// kvq/core/matrix.hpp — the host matrix types of kvq: row-major Eigen matrices, one row
/// per token (or query), one column per head-dimension channel. A row is contiguous, so
/// the block schemes' blocks run along it, as in a KV cache.
#pragma once

#include <Eigen/Core>

namespace kvq {

/// tokens x head_dim, row-major, fp32 (K, V, Q and their dequantized versions).
using matrix_f = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
/// The same in double (reference paths, fitting).
using matrix_d = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

}  // namespace kvq
