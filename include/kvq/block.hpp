/// \file
/// kvq/block.hpp — the block-scaled quantization layer.
///
/// Recipes (types; each header documents its reference, operation order and bad-input
/// behaviour), with their bit-exactness against the reference GPU kernels today:
/// ~~~
///   nvfp4_te                    TransformerEngine / cuBLAS NVFP4           bit-exact
///   nvfp4_te_enc_div            TE NVFP4, rowwise order (S_enc / SF)       bit-exact
///   nvfp4_te_2d_*, nvfp4_te_per_token_*  TE NVFP4 16x16 tiles / row amax (functions over a matrix, nvfp4_matrix.hpp)  bit-exact vs TE's reference
///   nvfp4_te_rht_quantize       TE NVFP4 after the random Hadamard transform (rht.hpp)  TE's reference where its fp32 sums are exact
///   e2m1_sr_te, e2m1x4_sr_te    TE's stochastic rounding to e2m1 (e2m1_sr.hpp)  TE's software rule; hardware mapping inferred
///   nvfp4_torchao               torchao NVFP4, single-level                bit-exact
///   nvfp4_torchao_two_level     torchao NVFP4 with per_tensor_scale        bit-exact
///   nvfp4_vllm<Instr>           vLLM NVFP4 KV-cache store (rcp.approx)     needs instruction model
///   nvfp4_vllm_4over6<Instr>    vLLM "4over6" scale search                 needs instruction model
///   mx_floor<E>                 OCP MX floor rule (torchao FLOOR)          bit-exact
///   mx_floor_microxcaling<E>    OCP floor, round-half-away elements        bit-exact
///   mx_rceil_te<E>              round-up rule, cuBLAS/CUTLASS/TE           bit-exact
///   mx_rceil_torchao<E>         round-up rule, torchao RCEIL               bit-exact
///   fp8_per_tensor<E, Instr>    vLLM FP8 KV (k_scale/v_scale), CUDA store  bit-exact (Triton store: needs model)
///   per_token_head<E, Instr>    vLLM fp8/int8_per_token_head (Triton)      needs instruction model
///   kivi_group<Bits, Compute>   KIVI INT8/INT4/INT2 asymmetric groups      bit-exact
/// ~~~
/// "needs instruction model": exact once a hardware model of rcp.approx.ftz.f32 / Triton's
/// fp32 division replaces instr::ieee (see block/instr.hpp: instr::gpu_approx<Arch> in
/// block/instr_registry.hpp, docs/instr.md); until then the results are those of
/// IEEE-correct operations.
#pragma once

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
#include <kvq/block/recipes.hpp>
#include <kvq/block/api.hpp>
#include <kvq/block/nvfp4_matrix.hpp>
#include <kvq/block/rht.hpp>
#include <kvq/block/e2m1_sr.hpp>
#include <kvq/block/parallel.hpp>

/// \namespace kvq::block
/// The block-scaled quantization layer: recipe types (NVFP4, OCP MX, FP8 per tensor /
/// per token-head, KIVI integer groups), packed code storage, and the generic
/// quantize/dequantize over any scheme (kvq/block/api.hpp).

/// \namespace kvq::instr
/// Instruction models: how a reference GPU kernel's reciprocals, divisions and
/// multiply-adds round (IEEE-correct, or a model of rcp.approx / ex2.approx / div.full
/// driven by a captured correction table), and the registry of named models.
