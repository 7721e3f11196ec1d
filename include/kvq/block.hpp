// kvq/block.hpp — the block-scaled quantization layer.
//
// Recipes (types; each header documents its reference, operation order and bad-input
// behaviour), with their bit-exactness against the reference GPU kernels today:
//   nvfp4_te                    TransformerEngine / cuBLAS NVFP4           bit-exact
//   nvfp4_torchao               torchao NVFP4, single-level                bit-exact
//   nvfp4_torchao_two_level     torchao NVFP4 with per_tensor_scale        bit-exact
//   nvfp4_vllm<Instr>           vLLM NVFP4 KV-cache store (rcp.approx)     needs instruction model
//   nvfp4_vllm_4over6<Instr>    vLLM "4over6" scale search                 needs instruction model
//   mx_floor<E>                 OCP MX floor rule (torchao FLOOR)          bit-exact
//   mx_floor_microxcaling<E>    OCP floor, round-half-away elements        bit-exact
//   mx_rceil_te<E>              round-up rule, cuBLAS/CUTLASS/TE           bit-exact
//   mx_rceil_torchao<E>         round-up rule, torchao RCEIL               bit-exact
//   fp8_per_tensor<E, Instr>    vLLM FP8 KV (k_scale/v_scale), CUDA store  bit-exact (Triton store: needs model)
//   per_token_head<E, Instr>    vLLM fp8/int8_per_token_head (Triton)      needs instruction model
//   kivi_group<Bits, Compute>   KIVI INT8/INT4/INT2 asymmetric groups      bit-exact
// "needs instruction model": exact once a hardware model of rcp.approx.ftz.f32 / Triton's
// fp32 division replaces instr::ieee (see block/instr.hpp); until then the results are
// those of IEEE-correct operations.
#pragma once

#include <cstddef>

#include <kvq/config.hpp>
#include <kvq/format.hpp>
#include <kvq/block/instr.hpp>
#include <kvq/block/io16.hpp>
#include <kvq/block/pack.hpp>
#include <kvq/block/scheme.hpp>
#include <kvq/block/nvfp4.hpp>
#include <kvq/block/mx.hpp>
#include <kvq/block/fp8_kv.hpp>
#include <kvq/block/int_group.hpp>
#include <kvq/block/api.hpp>

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
