/// \file
/// kvq/verify/scale_layout.hpp — where a kernel keeps its block scales: row-major (one
/// scale per block of consecutive elements, blocks of a row next to each other), or the
/// swizzled 128x4 tile layout that cuBLASLt and TransformerEngine hand to the Blackwell
/// block-scaled GEMMs (NVFP4 e4m3 scales, MXFP8/MXFP4 ue8m0 scales).
///
/// The swizzled layout (cuBLAS documentation, "1D Block Scaling Factors Layout";
/// TransformerEngine transformer_engine/common/swizzle/swizzle.cu; the same order as the
/// tcgen05.mma scale-factor tiles of the PTX ISA): the rows x cols scale matrix (rows =
/// rows of the data, cols = blocks per row) is padded with zeros to a multiple of 128
/// rows and 4 columns and cut into 128x4 tiles of 512 bytes, stored tile after tile in
/// row-major tile order. Inside a tile, scale (r, c), r < 128, c < 4, sits at
///     (r % 32) * 16 + (r / 32) * 4 + c
/// i.e. the tile is viewed as [4][32][4] (row group, row in group, column) and stored as
/// [32][4][4]: the 32 rows of each group interleaved so that one 16-byte load holds the
/// 4x4 scales a tensor-core lane needs.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvq/core/error.hpp>

namespace kvq::verify {

/// Layout of a block-scale matrix in memory.
enum class scale_layout : unsigned char {
  row_major,     ///< scale (r, c) at r * cols + c
  swizzled128x4  ///< cuBLAS / TransformerEngine 128x4 tiles (see above)
};

/// Spelling used on the command line and in reports: "rowmajor" or "swizzled128x4".
inline const char* to_string(scale_layout l) noexcept {
  return l == scale_layout::row_major ? "rowmajor" : "swizzled128x4";
}

/// Parses "rowmajor"/"row_major" or "swizzled128x4"/"swizzled".
/// \throws std::invalid_argument for any other spelling.
inline scale_layout parse_scale_layout(const std::string& v) {
  if (v == "rowmajor" || v == "row_major") return scale_layout::row_major;
  if (v == "swizzled128x4" || v == "swizzled") return scale_layout::swizzled128x4;
  throw std::invalid_argument("unknown --scale-layout '" + v + "' (rowmajor, swizzled128x4)");
}

/// Bytes of a swizzled buffer for a rows x cols scale matrix (padded to whole tiles).
inline std::size_t swizzled_size(std::size_t rows, std::size_t cols) {
  const std::size_t row_tiles = rows / 128 + (rows % 128 != 0 ? 1 : 0), col_tiles = cols / 4 + (cols % 4 != 0 ? 1 : 0);
  return kvq::detail::checked_mul(kvq::detail::checked_mul(row_tiles, col_tiles, "swizzled 128x4 scale tiles"), 512,
                                  "swizzled 128x4 scale count");
}

/// Offset of scale (r, c) of a rows x cols matrix in the swizzled buffer.
inline std::size_t swizzled_offset(std::size_t r, std::size_t c, std::size_t cols) noexcept {
  const std::size_t col_tiles = (cols + 3) / 4;
  const std::size_t tile = (r / 128) * col_tiles + c / 4;
  const std::size_t rr = r % 128;
  return tile * 512 + (rr % 32) * 16 + (rr / 32) * 4 + c % 4;
}

/// Row-major rows x cols scales into the swizzled layout (padding zero).
/// \throws std::invalid_argument if row_major.size() != rows * cols.
template <class T>
std::vector<T> swizzle_scales(const std::vector<T>& row_major, std::size_t rows, std::size_t cols) {
  if (row_major.size() != kvq::detail::checked_mul(rows, cols, "swizzle_scales: rows x cols"))
    throw std::invalid_argument("swizzle_scales: " + std::to_string(row_major.size()) + " scales for a " +
                                std::to_string(rows) + " x " + std::to_string(cols) + " matrix");
  std::vector<T> out(swizzled_size(rows, cols), T{});
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) out[swizzled_offset(r, c, cols)] = row_major[r * cols + c];
  return out;
}

/// The swizzled buffer back to row-major rows x cols (padding dropped).
/// \throws std::invalid_argument if swizzled.size() != swizzled_size(rows, cols).
template <class T>
std::vector<T> unswizzle_scales(const std::vector<T>& swizzled, std::size_t rows, std::size_t cols) {
  kvq::detail::checked_mul(rows, cols, "unswizzle_scales: rows x cols");
  if (swizzled.size() != swizzled_size(rows, cols))
    throw std::invalid_argument("the swizzled 128x4 layout of a " + std::to_string(rows) + " x " +
                                std::to_string(cols) + " scale matrix holds " +
                                std::to_string(swizzled_size(rows, cols)) + " scales (padded to 128 rows and 4 "
                                "columns), the file holds " + std::to_string(swizzled.size()));
  std::vector<T> out(rows * cols);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t c = 0; c < cols; ++c) out[r * cols + c] = swizzled[swizzled_offset(r, c, cols)];
  return out;
}

}  // namespace kvq::verify
