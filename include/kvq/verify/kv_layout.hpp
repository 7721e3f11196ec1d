/// \file
/// kvq/verify/kv_layout.hpp — the orders in which attention kernels keep a KV tensor,
/// so that the verifier can read a kernel's buffers in the order of the input it was
/// given (kvq/verify/check.hpp: verify_options::input_layout, kernel_layout, page).
///
/// NHD and HND. A KV tensor of `tokens` tokens, `heads` heads and `dim` elements per
/// head is stored either token-major, [tokens, heads, dim] (NHD), or head-major,
/// [heads, tokens, dim] (HND). FlashInfer names the two orders this way (its
/// `kv_layout` argument, "NHD" / "HND"); vLLM's paged caches use the same names for
/// [num_blocks, block_size, num_heads, head_size] and [num_blocks, num_heads,
/// block_size, head_size] (its NVFP4 writer for the trtllm-gen attention kernels
/// describes its scale interleave for the head-major order). Any leading dimensions (pages, batch) are kept; only the two
/// dimensions before the last are exchanged (swap_token_head_axes).
///
/// vLLM's NVFP4 KV-cache page. vLLM stores an NVFP4 KV cache (kv_cache_dtype "nvfp4")
/// as uint8 pages; its writer (vLLM csrc/libtorch_stable/nvfp4_kv_cache_kernels.cu,
/// reshape_and_cache_nvfp4, the layout for the SM100 trtllm-gen attention kernels) lays
/// one page of `page_size` tokens out as
///
///     [ K data | K scales | V data | V scales ]
///
/// with, for each side, data = heads * page_size * head_size/2 bytes (the 4-bit codes of
/// one (token, head) row packed two per byte, element 2i in the low nibble) followed by
/// scales = heads * page_size * head_size/16 e4m3 bytes (one per 16 elements). Inside each
/// region the (token, head) rows follow the page's order:
///
///     NHD: row (t, h) at (t * heads + h) * row_bytes
///     HND: row (t, h) at (h * page_size + t) * row_bytes
///
/// K scales are stored in that plain order. V scales are interleaved over groups of 4
/// tokens for the trtllm-gen kernel: with S = head_size / 16 scales per row, the scale s
/// of token t is stored at row t' and column s' of its head's [page_size, S] scale
/// matrix,
///
///     t' = (t / 4) * 4 + s / (S / 4)
///     s' = (s % (S / 4)) * 4 + t % 4
///
/// i.e. each group of 4 tokens is viewed as [4 tokens][4][S/4] and stored as
/// [4][S/4][4 tokens]: the 4 tokens' scales of one column side by side. The interleave
/// needs page_size and S to be multiples of 4 (vLLM checks both).
///
/// vllm_nvfp4_read_side returns one side's codes and scales in token order
/// ([pages, page_size, heads, ...], what kvq::block::quantize writes for an input of shape
/// [pages, page_size, heads, head_size]); vllm_nvfp4_write_side is its inverse.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvq/core/error.hpp>

namespace kvq::verify {

/// Order of a KV tensor's token and head dimensions (the two before the last).
enum class kv_layout : unsigned char {
  nhd,  ///< [..., tokens, heads, dim]: token-major
  hnd   ///< [..., heads, tokens, dim]: head-major
};

/// "nhd" or "hnd".
inline const char* to_string(kv_layout l) noexcept { return l == kv_layout::nhd ? "nhd" : "hnd"; }

/// Parses "nhd"/"NHD" or "hnd"/"HND".
/// \throws std::invalid_argument for any other spelling.
inline kv_layout parse_kv_layout(const std::string& v) {
  if (v == "nhd" || v == "NHD") return kv_layout::nhd;
  if (v == "hnd" || v == "HND") return kv_layout::hnd;
  throw std::invalid_argument("unknown KV layout '" + v + "' (nhd, hnd)");
}

/// A paged KV-cache format whose pages hold both codes and scales.
enum class page_layout : unsigned char {
  none,          ///< codes and scales are separate buffers
  vllm_nvfp4_k,  ///< the K side of vLLM's NVFP4 pages (see the file comment)
  vllm_nvfp4_v   ///< the V side of vLLM's NVFP4 pages: V scales interleaved over 4 tokens
};

/// "none", "vllm_nvfp4_k" or "vllm_nvfp4_v".
inline const char* to_string(page_layout l) noexcept {
  return l == page_layout::none ? "none" : l == page_layout::vllm_nvfp4_k ? "vllm_nvfp4_k" : "vllm_nvfp4_v";
}

/// Parses "none", "vllm_nvfp4_k" or "vllm_nvfp4_v".
/// \throws std::invalid_argument for any other spelling.
inline page_layout parse_page_layout(const std::string& v) {
  if (v == "none") return page_layout::none;
  if (v == "vllm_nvfp4_k") return page_layout::vllm_nvfp4_k;
  if (v == "vllm_nvfp4_v") return page_layout::vllm_nvfp4_v;
  throw std::invalid_argument("unknown page layout '" + v + "' (none, vllm_nvfp4_k, vllm_nvfp4_v)");
}

/// Exchanges the two dimensions before the last: `in` holds outer x a x b rows of
/// `row_bytes` bytes ([outer][a][b][row]); the result holds [outer][b][a][row]. NHD to HND
/// is swap_token_head_axes(x, outer, tokens, heads, row); HND to NHD swaps heads and
/// tokens in the call. Applying it twice with a and b exchanged gives `in` back.
/// \throws std::invalid_argument if in.size() != outer * a * b * row_bytes.
inline std::vector<std::uint8_t> swap_token_head_axes(const std::vector<std::uint8_t>& in, std::size_t outer,
                                                      std::size_t a, std::size_t b, std::size_t row_bytes) {
  using kvq::detail::checked_mul;
  const std::size_t want =
      checked_mul(checked_mul(checked_mul(outer, a, "KV layout"), b, "KV layout"), row_bytes, "KV layout");
  if (in.size() != want)
    throw std::invalid_argument("swap_token_head_axes: " + std::to_string(in.size()) + " bytes for " +
                                std::to_string(outer) + " x " + std::to_string(a) + " x " + std::to_string(b) +
                                " rows of " + std::to_string(row_bytes) + " bytes (" + std::to_string(want) + ")");
  std::vector<std::uint8_t> out(in.size());
  if (row_bytes == 0) return out;
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t i = 0; i < a; ++i)
      for (std::size_t j = 0; j < b; ++j)
        std::memcpy(out.data() + ((o * b + j) * a + i) * row_bytes, in.data() + ((o * a + i) * b + j) * row_bytes,
                    row_bytes);
  return out;
}

/// The shape of vLLM NVFP4 KV-cache pages (see the file comment).
struct vllm_nvfp4_geometry {
  /// Tokens per page (vLLM's block_size).
  std::size_t page_size = 16;
  /// KV heads.
  std::size_t heads = 1;
  /// Elements per head, a multiple of 16.
  std::size_t head_size = 128;
  /// Order of the (token, head) rows inside a page.
  kv_layout order = kv_layout::nhd;
};

/// Which half of a vLLM NVFP4 page.
enum class kv_side : unsigned char { k, v };

namespace detail {

inline void check_vllm_nvfp4(const vllm_nvfp4_geometry& g, kv_side side) {
  if (g.page_size == 0 || g.heads == 0 || g.head_size == 0)
    throw std::invalid_argument("vLLM NVFP4 pages: page size, heads and head size must be > 0");
  if (g.head_size % 16 != 0)
    throw std::invalid_argument("vLLM NVFP4 pages: head size " + std::to_string(g.head_size) +
                                " is not a multiple of 16 (one e4m3 scale per 16 elements)");
  if (side == kv_side::v && (g.page_size % 4 != 0 || (g.head_size / 16) % 4 != 0))
    throw std::invalid_argument("vLLM NVFP4 pages: the V scales' 4-token interleave needs a page size (" +
                                std::to_string(g.page_size) + ") and scales per head (" +
                                std::to_string(g.head_size / 16) + ") that are multiples of 4");
}

}  // namespace detail

/// Bytes of one page (both sides): 2 * heads * page_size * (head_size/2 + head_size/16).
inline std::size_t vllm_nvfp4_page_bytes(const vllm_nvfp4_geometry& g) {
  using kvq::detail::checked_mul;
  return checked_mul(checked_mul(checked_mul(2, g.heads, "vLLM NVFP4 page"), g.page_size, "vLLM NVFP4 page"),
                     g.head_size / 2 + g.head_size / 16, "vLLM NVFP4 page");
}

/// Offset, inside its page, of data byte `byte` (< head_size/2) of row (t, h) of `side`.
inline std::size_t vllm_nvfp4_data_offset(const vllm_nvfp4_geometry& g, kv_side side, std::size_t t, std::size_t h,
                                          std::size_t byte) noexcept {
  const std::size_t dd = g.head_size / 2, side_bytes = g.heads * g.page_size * (dd + g.head_size / 16);
  const std::size_t row = g.order == kv_layout::nhd ? t * g.heads + h : h * g.page_size + t;
  return (side == kv_side::v ? side_bytes : 0) + row * dd + byte;
}

/// Offset, inside its page, of scale s (< head_size/16) of row (t, h) of `side` (V: after
/// the 4-token interleave).
inline std::size_t vllm_nvfp4_scale_offset(const vllm_nvfp4_geometry& g, kv_side side, std::size_t t,
                                           std::size_t h, std::size_t s) noexcept {
  const std::size_t dd = g.head_size / 2, ns = g.head_size / 16, side_bytes = g.heads * g.page_size * (dd + ns);
  std::size_t tt = t, ss = s;
  if (side == kv_side::v) {
    const std::size_t q = ns / 4;
    tt = (t / 4) * 4 + s / q;
    ss = (s % q) * 4 + t % 4;
  }
  const std::size_t row = g.order == kv_layout::nhd ? tt * g.heads + h : h * g.page_size + tt;
  return (side == kv_side::v ? side_bytes : 0) + g.heads * g.page_size * dd + row * ns + ss;
}

/// One side of a KV cache in token order: codes [pages, page_size, heads, head_size/2]
/// (packed two per byte) and scales [pages, page_size, heads, head_size/16].
struct kv_side_buffers {
  /// Packed 4-bit codes, token order.
  std::vector<std::uint8_t> codes;
  /// e4m3 scale codes, token order.
  std::vector<std::uint8_t> scales;
};

/// Reads `side` of `pages` vLLM NVFP4 pages (`bytes` bytes at `cache`) into token order.
/// \throws std::invalid_argument if bytes is not pages * vllm_nvfp4_page_bytes(g), or for
///         a geometry vLLM refuses (head size not a multiple of 16; V: page size or scales
///         per head not multiples of 4).
inline kv_side_buffers vllm_nvfp4_read_side(const std::uint8_t* cache, std::size_t bytes, std::size_t pages,
                                            const vllm_nvfp4_geometry& g, kv_side side) {
  detail::check_vllm_nvfp4(g, side);
  const std::size_t pb = vllm_nvfp4_page_bytes(g);
  if (bytes != kvq::detail::checked_mul(pages, pb, "vLLM NVFP4 cache"))
    throw std::invalid_argument("a vLLM NVFP4 cache of " + std::to_string(pages) + " pages of " +
                                std::to_string(g.page_size) + " tokens, " + std::to_string(g.heads) + " heads and " +
                                std::to_string(g.head_size) + " elements per head holds " +
                                std::to_string(pages * pb) + " bytes (" + std::to_string(pb) +
                                " per page); the buffer holds " + std::to_string(bytes));
  if (bytes > 0 && cache == nullptr) throw std::invalid_argument("vLLM NVFP4 cache is null");
  const std::size_t dd = g.head_size / 2, ns = g.head_size / 16, rows = pages * g.page_size * g.heads;
  kv_side_buffers r;
  r.codes.resize(rows * dd);
  r.scales.resize(rows * ns);
  for (std::size_t p = 0; p < pages; ++p)
    for (std::size_t t = 0; t < g.page_size; ++t)
      for (std::size_t h = 0; h < g.heads; ++h) {
        const std::size_t row = (p * g.page_size + t) * g.heads + h;
        const std::uint8_t* page = cache + p * pb;
        std::memcpy(r.codes.data() + row * dd, page + vllm_nvfp4_data_offset(g, side, t, h, 0), dd);
        for (std::size_t s = 0; s < ns; ++s) r.scales[row * ns + s] = page[vllm_nvfp4_scale_offset(g, side, t, h, s)];
      }
  return r;
}

/// Writes `side` of the token-order buffers into `cache` (pages * vllm_nvfp4_page_bytes(g)
/// bytes, the other side untouched): the inverse of vllm_nvfp4_read_side.
/// \throws std::invalid_argument if the sizes do not fit the geometry.
inline void vllm_nvfp4_write_side(std::vector<std::uint8_t>& cache, std::size_t pages, const vllm_nvfp4_geometry& g,
                                  kv_side side, const kv_side_buffers& in) {
  detail::check_vllm_nvfp4(g, side);
  const std::size_t pb = vllm_nvfp4_page_bytes(g);
  const std::size_t dd = g.head_size / 2, ns = g.head_size / 16, rows = pages * g.page_size * g.heads;
  if (cache.size() != kvq::detail::checked_mul(pages, pb, "vLLM NVFP4 cache") || in.codes.size() != rows * dd ||
      in.scales.size() != rows * ns)
    throw std::invalid_argument("vllm_nvfp4_write_side: " + std::to_string(cache.size()) + " cache bytes, " +
                                std::to_string(in.codes.size()) + " code bytes and " +
                                std::to_string(in.scales.size()) + " scales for " + std::to_string(pages) +
                                " pages (" + std::to_string(pages * pb) + ", " + std::to_string(rows * dd) + ", " +
                                std::to_string(rows * ns) + " expected)");
  for (std::size_t p = 0; p < pages; ++p)
    for (std::size_t t = 0; t < g.page_size; ++t)
      for (std::size_t h = 0; h < g.heads; ++h) {
        const std::size_t row = (p * g.page_size + t) * g.heads + h;
        std::uint8_t* page = cache.data() + p * pb;
        std::memcpy(page + vllm_nvfp4_data_offset(g, side, t, h, 0), in.codes.data() + row * dd, dd);
        for (std::size_t s = 0; s < ns; ++s) page[vllm_nvfp4_scale_offset(g, side, t, h, s)] = in.scales[row * ns + s];
      }
}

}  // namespace kvq::verify
