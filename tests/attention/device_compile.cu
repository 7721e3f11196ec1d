// Compile-only check (KVQ_CUDA=ON): the KVQ_HD parts of the attention and inject layers
// build as device code (math, reductions, RNG, RoPE rows, Hadamard, bf16 rounding and
// the three per-query kernels, FA3 with the tensor-core
// accumulation model, the random-sign rotation). No GPU is needed to build it.
#include <kvq/attention/hadamard.hpp>
#include <kvq/attention/kernels.hpp>
#include <kvq/core/math.hpp>
#include <kvq/core/reduce.hpp>
#include <kvq/core/float16.hpp>
#include <kvq/inject/random.hpp>
#include <kvq/inject/rope_row.hpp>

__global__ void kvq_attention_device_compile(float* out, double* dout, const float* q, const float* K, const float* V,
                                             double* p, float* o, float* scratch, double* dacc, std::size_t n,
                                             std::size_t d) {
  const unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
  float s = 0.0f, c = 0.0f;
  kvq::math::sincos(out[i], s, c);
  out[i] = kvq::math::exp(out[i]) + kvq::math::log(out[i]) + kvq::math::exp2(s) + kvq::math::log2(c);
  dout[i] = kvq::math::exp(dout[i]) + kvq::math::log2(dout[i]);
  const kvq::inject::counter_rng g{1, 2};
  out[i] += g.normal_float(i) + g.uniform_float(i);
  float inv[4] = {1.0f, 0.1f, 0.01f, 0.001f};
  float row[8];
  for (int j = 0; j < 8; ++j) row[j] = out[j];
  kvq::inject::rope_rotate_row(row, 8, i, inv, kvq::inject::rope_style::half);
  kvq::attention::hadamard_rotate(row, 8);
  out[i] += row[0] + kvq::round_bf16(row[1]) + kvq::reduce::tree_sum(out, 16);
  const kvq::attention::rows_view<float> Kv{K, n, d, d}, Vv{V, n, d, d};
  kvq::attention::fa3_config cfg;
  cfg.block_n = 64;
  cfg.scale_log2 = 0.18f;
  kvq::attention::fa3_query<kvq::fmt::e4m3>(q, Kv, Vv, cfg, p, o, scratch);
  cfg.accumulation = kvq::attention::fa3_accumulation::tensor_core;  // the sm_90 fp8 block-FMA model
  cfg.pv_promote_every = 4;
  kvq::attention::fa3_query<kvq::fmt::e5m2>(q, Kv, Vv, cfg, p, o, scratch);
  float signs[8];
  kvq::attention::hadamard_signs(3, signs, 8);
  kvq::attention::signed_hadamard_rotate(row, signs, 8);
  kvq::attention::signed_hadamard_unrotate(row, signs, 8);
  kvq::attention::storage_query(q, Kv, Vv, 0.125f, false, p, o, scratch, scratch + n, scratch + n + 64 * d);
  kvq::attention::reference_query(q, Kv, Vv, p, dout, dacc, dacc + 64 * d);
}
