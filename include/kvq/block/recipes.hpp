/// \file
/// kvq/block/recipes.hpp — the named recipes (one alias per element choice) and the
/// runtime description of a recipe, scheme_info (for tables, planners and reports).
#pragma once

#include <cstddef>

#include <kvq/block/fp8_kv.hpp>
#include <kvq/block/int_group.hpp>
#include <kvq/block/mx.hpp>
#include <kvq/block/nvfp4.hpp>
#include <kvq/block/scheme.hpp>
#include <kvq/format/formats.hpp>

namespace kvq {
namespace block {

// Named MX element choices.
/// MXFP8 E4M3, OCP floor rule.
using mxfp8_e4m3_floor = mx_floor<fmt::e4m3>;
/// MXFP8 E5M2, OCP floor rule.
using mxfp8_e5m2_floor = mx_floor<fmt::e5m2>;
/// MXFP6 E3M2, OCP floor rule.
using mxfp6_e3m2_floor = mx_floor<fmt::e3m2>;
/// MXFP6 E2M3, OCP floor rule.
using mxfp6_e2m3_floor = mx_floor<fmt::e2m3>;
/// MXFP4 (E2M1), OCP floor rule.
using mxfp4_floor = mx_floor<fmt::e2m1>;
/// MXFP8 E4M3, round-up rule as TransformerEngine / cuBLAS.
using mxfp8_e4m3_rceil = mx_rceil_te<fmt::e4m3>;
/// MXFP8 E5M2, round-up rule as TransformerEngine / cuBLAS.
using mxfp8_e5m2_rceil = mx_rceil_te<fmt::e5m2>;
/// MXFP6 E3M2, round-up rule as TransformerEngine / cuBLAS.
using mxfp6_e3m2_rceil = mx_rceil_te<fmt::e3m2>;
/// MXFP6 E2M3, round-up rule as TransformerEngine / cuBLAS.
using mxfp6_e2m3_rceil = mx_rceil_te<fmt::e2m3>;
/// MXFP4 (E2M1), round-up rule as TransformerEngine / cuBLAS.
using mxfp4_rceil = mx_rceil_te<fmt::e2m1>;
/// vLLM FP8 E4M3 KV cache with a tensor scale (CUDA store, IEEE division).
using fp8_e4m3_per_tensor = fp8_per_tensor<fmt::e4m3>;
/// vLLM FP8 E5M2 KV cache with a tensor scale (CUDA store, IEEE division).
using fp8_e5m2_per_tensor = fp8_per_tensor<fmt::e5m2>;
/// vLLM fp8_per_token_head (E4M3, IEEE division until an instruction model is given).
using fp8_per_token_head = per_token_head<fmt::e4m3>;
/// vLLM int8_per_token_head (IEEE division until an instruction model is given).
using int8_per_token_head = per_token_head<int8_element>;
/// KIVI INT8 groups computed in fp32.
using kivi_int8 = kivi_group<8>;
/// KIVI INT4 groups computed in fp32.
using kivi_int4 = kivi_group<4>;
/// KIVI INT2 groups computed in fp32.
using kivi_int2 = kivi_group<2>;

/// A runtime description of a scheme (for tables, planners and reports).
struct scheme_info {
  /// Recipe name (S::name).
  const char* name;
  /// Reference implementation (S::source).
  const char* source;
  /// Bits per element code in the packed buffer.
  int storage_bits;
  /// Elements per block.
  std::size_t block_size;
  /// Bytes per block scale (0: none).
  int scale_bytes;
  /// True if blocks carry a zero point.
  bool zero_point;
  /// What the tensor value means.
  tensor_kind tensor;
  /// Bit-exactness against the reference today.
  exactness exact;
  /// Stored bits per element including block scales and zero points (bits_per_value()).
  double bits_per_value;
};

/// The scheme_info of scheme s.
template <class S>
constexpr scheme_info info_of(const S& s) noexcept {
  return {S::name, S::source, S::storage_bits, s.block_size(), S::scale_bytes, S::has_zero_point, S::tensor,
          S::exact, bits_per_value(s)};
}

}  // namespace block
}  // namespace kvq
