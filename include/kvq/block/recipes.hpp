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
using mxfp8_e4m3_floor = mx_floor<fmt::e4m3>;
using mxfp8_e5m2_floor = mx_floor<fmt::e5m2>;
using mxfp6_e3m2_floor = mx_floor<fmt::e3m2>;
using mxfp6_e2m3_floor = mx_floor<fmt::e2m3>;
using mxfp4_floor = mx_floor<fmt::e2m1>;
using mxfp8_e4m3_rceil = mx_rceil_te<fmt::e4m3>;
using mxfp8_e5m2_rceil = mx_rceil_te<fmt::e5m2>;
using mxfp6_e3m2_rceil = mx_rceil_te<fmt::e3m2>;
using mxfp6_e2m3_rceil = mx_rceil_te<fmt::e2m3>;
using mxfp4_rceil = mx_rceil_te<fmt::e2m1>;
using fp8_e4m3_per_tensor = fp8_per_tensor<fmt::e4m3>;
using fp8_e5m2_per_tensor = fp8_per_tensor<fmt::e5m2>;
using fp8_per_token_head = per_token_head<fmt::e4m3>;
using int8_per_token_head = per_token_head<int8_element>;
using kivi_int8 = kivi_group<8>;
using kivi_int4 = kivi_group<4>;
using kivi_int2 = kivi_group<2>;

/// A runtime description of a scheme (for tables, planners and reports).
struct scheme_info {
  const char* name;
  const char* source;
  int storage_bits;
  std::size_t block_size;
  int scale_bytes;
  bool zero_point;
  tensor_kind tensor;
  exactness exact;
  double bits_per_value;
};

template <class S>
constexpr scheme_info info_of(const S& s) noexcept {
  return {S::name, S::source, S::storage_bits, s.block_size(), S::scale_bytes, S::has_zero_point, S::tensor,
          S::exact, bits_per_value(s)};
}

}  // namespace block
}  // namespace kvq
