/// \file
/// kvq/attention/fa3_tiles.hpp — FlashAttention-3's KV tile length (kBlockN) for the FP8
/// forward on Hopper, per head dimension.
///
/// From hopper/tile_size.h (Dao-AILab/flash-attention), tile_size_fwd_sm90 with
/// element_size = 1 (FP8), two MMA warpgroups, no paged KV, row-major V, no softcap:
/// ~~~
///   headdim <= 64: 160,  <= 96: 128,  <= 128: 224,  <= 192: 160,  else 128.
/// ~~~
/// (Causal masking does not change the FP8 tile; local attention uses 64 above 192.)
/// Every value is a multiple of 32, so a KV tile is a whole number of fp8 wgmma k-steps.
#pragma once

#include <cstddef>

#include <kvq/config.hpp>

namespace kvq {
namespace attention {

/// FA3's kBlockN (KV tile length in tokens) of the FP8 forward on Hopper for this
/// head dimension (hopper/tile_size.h, tile_size_fwd_sm90; see the file comment).
KVQ_HD constexpr std::size_t fa3_fp8_block_n(std::size_t head_dim) {
  return head_dim <= 64 ? 160 : head_dim <= 96 ? 128 : head_dim <= 128 ? 224 : head_dim <= 192 ? 160 : 128;
}

}  // namespace attention
}  // namespace kvq
