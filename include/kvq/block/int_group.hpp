/// \file
/// kvq/block/int_group.hpp — KIVI-style asymmetric integer groups (INT8/INT4/INT2).
///
/// Reference: jy-yuan/KIVI quant/new_pack.py (triton_quantize_and_pack_along_last_dim,
/// quant_and_pack_vcache, unpack_and_dequant_vcache), models/llama_kivi.py (which axis,
/// residual window). Per group of `group` consecutive elements:
/// ~~~
///     mn = min(group), mx = max(group)               (Triton tl.min/tl.max: NaN ignored
///                                                     unless the whole group is NaN)
///     scale = (mx - mn) / (2^bits - 1)              tensor / Python int: PyTorch's CUDA
///                                                     kernel multiplies by fp32(1/(2^bits-1))
///     q = round((x - mn) / scale) after clamp to [0, 2^bits-1], round = torch.round
///         (half to even), cast to int32 (CUDA cvt.rzi: NaN -> 0)
///     each op rounds to the model dtype (Compute: fp16 for KIVI's models, fp32 for float input)
///   stored: packed codes (INT4 two per byte low nibble first, INT2 four per byte from bit 0
///   — the byte view of KIVI's little-endian int32 words), one fp32 scale and one fp32 zero
///   point (= mn) per group; for fp16 compute both are fp16 values (KIVI stores them as fp16).
///   dequantize (unpack_and_dequant_*): q * scale + mn, each op rounded to Compute.
/// ~~~
/// Bad input: a constant group has scale 0, so (x - mn) / 0 = 0/0 = NaN, which the GPU's
/// ~~~
///   float->int conversion turns into code 0; it dequantizes to mn exactly. NaN elements
///   store code 0. Which axis is grouped (keys per channel, values per token) and the
///   full-precision residual window are the KV cache's business (kv/).
/// ~~~
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <kvq/block/io16.hpp>
#include <kvq/block/scheme.hpp>
#include <kvq/config.hpp>

namespace kvq {
namespace block {

/// Unsigned integer element codes of a given width.
template <int Bits>
struct uint_element {
  /// Code width in bits.
  static constexpr int bits = Bits;
};

/// KIVI asymmetric integer group of `group` elements with `Bits`-bit codes: fp32 scale
/// (max - min) / (2^Bits - 1) and zero point (the group minimum), every step rounded to the
/// compute dtype Compute (f32_input, or fp16_input as in KIVI's models). See the file comment.
template <int Bits, class Compute = f32_input>
struct kivi_group {
  static_assert(Bits == 2 || Bits == 4 || Bits == 8, "KIVI packs 2, 4 or 8 bits");
  /// Traits type of the element codes.
  using element_format = uint_element<Bits>;
  /// The dtype the reference computes in (f32_input or fp16_input).
  using compute_type = Compute;
  /// Type of one stored block scale: an fp32 value.
  using scale_type = float;
  /// Bits one element code occupies in the packed buffer (4: two per byte, low nibble first; 2:
  /// four per byte; 8: one byte).
  static constexpr int storage_bits = Bits;
  /// Bytes of one stored block scale (0: no block scales).
  static constexpr int scale_bytes = 4;
  /// True if each block also stores an fp32 zero point.
  static constexpr bool has_zero_point = true;
  /// What the recipe's single fp32 tensor value means.
  static constexpr tensor_kind tensor = tensor_kind::none;
  /// Whether kvq reproduces the reference kernel bit for bit with IEEE operations today.
  static constexpr exactness exact = exactness::bit_exact;
  /// NaN rule of the tensor amax from which the tensor value is calibrated.
  static constexpr amax_nan tensor_amax_rule = amax_nan::ignore;
  /// True when the arithmetic rounds to fp16 (Compute = fp16_input).
  static constexpr bool fp16_compute = std::is_same<Compute, fp16_input>::value;
  /// Recipe name, unique per recipe type (tables, reports, kv::format_name).
  static constexpr const char* name = Bits == 2 ? (fp16_compute ? "kivi_int2_fp16" : "kivi_int2")
                                      : Bits == 4 ? (fp16_compute ? "kivi_int4_fp16" : "kivi_int4")
                                                  : (fp16_compute ? "kivi_int8_fp16" : "kivi_int8");
  /// The reference implementation the recipe reproduces (files and functions).
  static constexpr const char* source = "jy-yuan/KIVI quant/new_pack.py (triton_quantize_and_pack_along_last_dim)";
  /// Largest code, 2^Bits - 1.
  static constexpr int max_int = (1 << Bits) - 1;

  /// Elements per group (KIVI's group_size, 32 by default); group * Bits must be a
  /// multiple of 8 so groups never share a byte.
  std::size_t group = 32;
  /// Elements per block.
  KVQ_HD constexpr std::size_t block_size() const noexcept { return group; }

  /// No encode-side constants: the recipe has no tensor-level stage.
  struct params {};
  /// No tensor value: always 1.
  KVQ_HD static constexpr float tensor_value_from_amax(float) noexcept { return 1.0f; }
  /// No tensor-level stage: empty params.
  KVQ_HD static constexpr params prepare(float) noexcept { return {}; }

  /// Quantizes one group of `group` inputs of kind In: codes packed from bit 0 (the bytes
  /// are cleared first), *scale = (max - min) / (2^Bits - 1) and *zero = min, every step
  /// rounded to Compute; NaN elements are skipped for min/max and code to 0.
  template <class In>
  KVQ_HD void quantize_block(const typename In::storage* x, const params&, std::uint8_t* codes, scale_type* scale,
                             float* zero) const noexcept {
    float mn = 0.0f, mx = 0.0f;
    bool seen = false;
    for (std::size_t i = 0; i < group; ++i) {
      const float v = Compute::round(In::load(x[i]));
      if (detail::is_nan(v)) continue;
      if (!seen) {
        mn = mx = v;
        seen = true;
      } else {
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
      }
    }
    if (!seen) mn = mx = bit_cast<float>(0x7FC00000u);
    const float inv_levels = 1.0f / static_cast<float>(max_int);
    const float range = Compute::round(mx - mn);
    const float s = Compute::round(range * inv_levels);
    *scale = s;
    *zero = mn;
    const std::size_t nbytes = group * Bits / 8;
    for (std::size_t b = 0; b < nbytes; ++b) codes[b] = 0;
    const float top = static_cast<float>(max_int);
    for (std::size_t i = 0; i < group; ++i) {
      const float d = Compute::round(Compute::round(In::load(x[i])) - mn);
      float q = Compute::round(d / s);
      if (!detail::is_nan(q)) {
        q = q < 0.0f ? 0.0f : (q > top ? top : q);
        q = detail::rne_nonneg(q);
      }
      const int c = detail::cvt_rzi_s32(q);
      put(codes, i, static_cast<std::uint8_t>(c));
    }
  }

  /// Decodes one block's codes with its scale (and zero point) into out[0..block_size()).
  KVQ_HD void dequantize_block(const std::uint8_t* codes, scale_type scale, float zero, const params&,
                               float* out) const noexcept {
    for (std::size_t i = 0; i < group; ++i) {
      const float q = static_cast<float>(get(codes, i));
      out[i] = Compute::round(Compute::round(q * scale) + zero);
    }
  }

  /// ORs code c into element i of a packed group (the bytes must start zeroed); 2-bit codes
  /// four per byte from bit 0, 4-bit two per byte low nibble first, 8-bit one per byte.
  KVQ_HD static void put(std::uint8_t* codes, std::size_t i, std::uint8_t c) noexcept {
    if (Bits == 8) {
      codes[i] = c;
    } else {
      constexpr std::size_t per = 8 / Bits;
      const unsigned sh = static_cast<unsigned>((i % per) * Bits);
      codes[i / per] = static_cast<std::uint8_t>(codes[i / per] | ((c & max_int) << sh));
    }
  }
  /// Code of element i of a packed group (the layout of put()).
  KVQ_HD static std::uint8_t get(const std::uint8_t* codes, std::size_t i) noexcept {
    if (Bits == 8) return codes[i];
    constexpr std::size_t per = 8 / Bits;
    const unsigned sh = static_cast<unsigned>((i % per) * Bits);
    return static_cast<std::uint8_t>((codes[i / per] >> sh) & max_int);
  }
};

/// KIVI group computing in fp16, as KIVI's models do.
template <int Bits>
using kivi_group_fp16 = kivi_group<Bits, fp16_input>;

}  // namespace block
}  // namespace kvq
