/// \file
/// kvq/block/pack.hpp — packed code storage.
///
/// Layouts (the kernel layouts of the references):
/// ~~~
///  - 4-bit codes (e2m1, INT4): two per byte, element 2i in the LOW nibble, 2i+1 in
///    the high nibble — the `cvt.rn.satfinite.e2m1x2.f32 d, hi, lo` packing used by
///    TransformerEngine, vLLM and torchao (pack_uint4: `data[1::2] << 4 | data[::2]`).
///  - 2-bit codes (INT2): four per byte, element 4i+k in bits [2k, 2k+2) — the byte
///    view of KIVI's little-endian int32 packing (quant/new_pack.py, element j of a
///    word at bits*j).
///  - 8-bit storage (e4m3, e5m2, FP6, INT8): one byte per element; FP6 codes are
///    right-aligned (bits 0..5), as CUDA's __nv_fp6_storage_t.
/// ~~~
#pragma once

#include <cstddef>
#include <cstdint>

#include <kvq/config.hpp>

namespace kvq {
namespace block {

/// Bytes needed for n codes stored with `storage_bits` (2, 4 or 8) bits each.
KVQ_HD constexpr std::size_t packed_bytes(std::size_t n, int storage_bits) noexcept {
  return (n * static_cast<std::size_t>(storage_bits) + 7u) / 8u;
}

/// Write code `c` (right-aligned, `storage_bits` wide) as element i of a packed buffer.
/// The buffer must have been zeroed where sub-byte codes share a byte, or be written
/// whole (the block quantizers write every bit of their bytes).
KVQ_HD inline void put_code(std::uint8_t* buf, std::size_t i, std::uint8_t c, int storage_bits) noexcept {
  if (storage_bits == 8) {
    buf[i] = c;
  } else if (storage_bits == 4) {
    std::uint8_t& b = buf[i >> 1];
    b = (i & 1u) ? static_cast<std::uint8_t>((b & 0x0Fu) | ((c & 0x0Fu) << 4))
                 : static_cast<std::uint8_t>((b & 0xF0u) | (c & 0x0Fu));
  } else {  // 2
    std::uint8_t& b = buf[i >> 2];
    const unsigned sh = static_cast<unsigned>((i & 3u) * 2u);
    b = static_cast<std::uint8_t>((b & ~(0x3u << sh)) | ((c & 0x3u) << sh));
  }
}

/// Read element i of a packed buffer (right-aligned code).
KVQ_HD inline std::uint8_t get_code(const std::uint8_t* buf, std::size_t i, int storage_bits) noexcept {
  if (storage_bits == 8) return buf[i];
  if (storage_bits == 4) return static_cast<std::uint8_t>((buf[i >> 1] >> ((i & 1u) * 4u)) & 0x0Fu);
  return static_cast<std::uint8_t>((buf[i >> 2] >> ((i & 3u) * 2u)) & 0x3u);
}

/// Pack n right-aligned codes (one per byte in `codes`) into `out` (packed_bytes(n) bytes).
KVQ_HD inline void pack_codes(const std::uint8_t* codes, std::size_t n, int storage_bits, std::uint8_t* out) noexcept {
  const std::size_t nb = packed_bytes(n, storage_bits);
  for (std::size_t b = 0; b < nb; ++b) out[b] = 0;
  for (std::size_t i = 0; i < n; ++i) put_code(out, i, codes[i], storage_bits);
}

/// Unpack n codes from `in` into one byte each.
KVQ_HD inline void unpack_codes(const std::uint8_t* in, std::size_t n, int storage_bits, std::uint8_t* codes) noexcept {
  for (std::size_t i = 0; i < n; ++i) codes[i] = get_code(in, i, storage_bits);
}

}  // namespace block
}  // namespace kvq
