/// \file
/// kvq/block/int_group.hpp — KIVI-style asymmetric integer groups (INT8/INT4/INT2).
///
/// Reference: jy-yuan/KIVI quant/new_pack.py (triton_quantize_and_pack_along_last_dim,
/// quant_and_pack_vcache, unpack_and_dequant_vcache), models/llama_kivi.py (which axis,
/// residual window). Per group of `group` consecutive elements:
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
/// Bad input: a constant group has scale 0, so (x - mn) / 0 = 0/0 = NaN, which the GPU's
///   float->int conversion turns into code 0; it dequantizes to mn exactly. NaN elements
///   store code 0. Which axis is grouped (keys per channel, values per token) and the
///   full-precision residual window are the KV cache's business (kv/).
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
  static constexpr int bits = Bits;
};

template <int Bits, class Compute = f32_input>
struct kivi_group {
  static_assert(Bits == 2 || Bits == 4 || Bits == 8, "KIVI packs 2, 4 or 8 bits");
  using element_format = uint_element<Bits>;
  using compute_type = Compute;
  using scale_type = float;
  static constexpr int storage_bits = Bits;
  static constexpr int scale_bytes = 4;
  static constexpr bool has_zero_point = true;
  static constexpr tensor_kind tensor = tensor_kind::none;
  static constexpr exactness exact = exactness::bit_exact;
  static constexpr amax_nan tensor_amax_rule = amax_nan::ignore;
  static constexpr bool fp16_compute = std::is_same<Compute, fp16_input>::value;
  static constexpr const char* name = Bits == 2 ? (fp16_compute ? "kivi_int2_fp16" : "kivi_int2")
                                      : Bits == 4 ? (fp16_compute ? "kivi_int4_fp16" : "kivi_int4")
                                                  : (fp16_compute ? "kivi_int8_fp16" : "kivi_int8");
  static constexpr const char* source = "jy-yuan/KIVI quant/new_pack.py (triton_quantize_and_pack_along_last_dim)";
  static constexpr int max_int = (1 << Bits) - 1;

  /// Elements per group (KIVI's group_size, 32 by default); group * Bits must be a
  /// multiple of 8 so groups never share a byte.
  std::size_t group = 32;
  KVQ_HD constexpr std::size_t block_size() const noexcept { return group; }

  struct params {};
  KVQ_HD static constexpr float tensor_value_from_amax(float) noexcept { return 1.0f; }
  KVQ_HD static constexpr params prepare(float) noexcept { return {}; }

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

  KVQ_HD void dequantize_block(const std::uint8_t* codes, scale_type scale, float zero, const params&,
                               float* out) const noexcept {
    for (std::size_t i = 0; i < group; ++i) {
      const float q = static_cast<float>(get(codes, i));
      out[i] = Compute::round(Compute::round(q * scale) + zero);
    }
  }

  KVQ_HD static void put(std::uint8_t* codes, std::size_t i, std::uint8_t c) noexcept {
    if (Bits == 8) {
      codes[i] = c;
    } else {
      constexpr std::size_t per = 8 / Bits;
      const unsigned sh = static_cast<unsigned>((i % per) * Bits);
      codes[i / per] = static_cast<std::uint8_t>(codes[i / per] | ((c & max_int) << sh));
    }
  }
  KVQ_HD static std::uint8_t get(const std::uint8_t* codes, std::size_t i) noexcept {
    if (Bits == 8) return codes[i];
    constexpr std::size_t per = 8 / Bits;
    const unsigned sh = static_cast<unsigned>((i % per) * Bits);
    return static_cast<std::uint8_t>((codes[i / per] >> sh) & max_int);
  }
};

template <int Bits>
using kivi_group_fp16 = kivi_group<Bits, fp16_input>;

}  // namespace block
}  // namespace kvq
