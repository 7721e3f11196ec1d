// Compaction then quantization: codec application, bias storage, byte accounting.
#include <cstdint>
#include <stdexcept>

#include <catch2/catch.hpp>

#include <kvq/compact/attention_matching.hpp>
#include <kvq/compact/eviction.hpp>
#include <kvq/compact/quantize.hpp>
#include <kvq/compact/reference.hpp>
#include <kvq/block/int_group.hpp>
#include <kvq/core/float16.hpp>
#include <kvq/kv/registry.hpp>

#include "data.hpp"

using namespace kvq::compact;
using kvq::matrix_d;
using kvq::matrix_f;
using kvq_test_compact::gaussian_matrix;

TEST_CASE("bias storage: fp32 keeps the float, bf16 rounds to nearest even") {
  // bf16 has 8 significand bits: in [1, 2) its spacing is 2^-7.
  CHECK(stored_beta(1.0f + 0x1p-8f, beta_storage::bf16) == 1.0f);                   // tie -> even (1.0)
  CHECK(stored_beta(1.0f + 0x1p-7f + 0x1p-8f, beta_storage::bf16) == 1.0f + 0x1p-6f);  // tie -> even
  CHECK(stored_beta(1.0f + 0x1p-8f + 0x1p-20f, beta_storage::bf16) == 1.0f + 0x1p-7f);  // above the tie
  CHECK(stored_beta(-3.0f - 0x1p-7f, beta_storage::bf16) == -3.0f);                   // tie at 2^-6 spacing
  CHECK(stored_beta(-27.631021f, beta_storage::bf16) == -27.625f);                    // the weight floor's beta
  CHECK(stored_beta(1.0f + 0x1p-8f, beta_storage::fp32) == 1.0f + 0x1p-8f);
}

TEST_CASE("quantize_compacted applies the codecs and the bias storage, keeps the selection") {
  const matrix_f k = gaussian_matrix(128, 16, 3, 1), v = gaussian_matrix(128, 16, 3, 2);
  const matrix_f q = gaussian_matrix(64, 16, 3, 3);
  const compaction_result c = attention_matching(k, v, q, 16);
  int key_calls = 0, value_calls = 0;
  const compaction_result z = quantize_compacted(
      c, [&](const matrix_f& m) { ++key_calls; return matrix_f(m * 2.0f); },
      [&](const matrix_f& m) { ++value_calls; return matrix_f(m * 0.5f); }, beta_storage::bf16);
  CHECK(key_calls == 1);
  CHECK(value_calls == 1);
  CHECK(z.kept == c.kept);
  CHECK(z.keys == matrix_f(c.keys * 2.0f));
  CHECK(z.values == matrix_f(c.values * 0.5f));
  for (std::size_t j = 0; j < c.beta.size(); ++j) {
    CHECK(z.beta[j] == stored_beta(c.beta[j], beta_storage::bf16));
    CHECK(std::abs(z.beta[j] - c.beta[j]) <= std::abs(c.beta[j]) * 0x1p-8f);  // half a bf16 ulp
  }
  // The identity codec with fp32 biases changes nothing: same attention, bit for bit.
  const compaction_result same = quantize_compacted(c, [](const matrix_f& m) { return m; }, beta_storage::fp32);
  CHECK(compacted_attention(q, same) == compacted_attention(q, c));
}

TEST_CASE("quantize_compacted rejects a codec that changes the shape, and dropped biases") {
  const matrix_f k = gaussian_matrix(64, 8, 4, 1), v = gaussian_matrix(64, 8, 4, 2);
  const matrix_f q = gaussian_matrix(32, 8, 4, 3);
  const compaction_result c = attention_matching(k, v, q, 8);
  CHECK_THROWS_WITH(quantize_compacted(c, [](const matrix_f& m) { return matrix_f(m.topRows(2)); },
                                       beta_storage::fp32),
                    Catch::Contains("shape"));
  CHECK_THROWS_WITH(quantize_compacted(c, [](const matrix_f& m) { return m; }, beta_storage::none),
                    Catch::Contains("nonzero biases"));
  // Eviction has no biases: storing none is fine.
  const compaction_result e = streaming_llm(k, v, 8);
  CHECK(quantize_compacted(e, [](const matrix_f& m) { return m; }, beta_storage::none).beta ==
        std::vector<float>(8, 0.0f));
}

TEST_CASE("byte accounting is exact and inverts") {
  // fp8 K and V at d = 64: 128 bytes per token; NVFP4 K and V at d = 64: 2 * (32 + 4)
  // = 72 bytes (plus the per-tensor scale, not per token); a 4.5-bit/element scheme at
  // d = 20: 2 * 20 * 4.5 / 8 = 22.5 bytes.
  CHECK(compacted_bytes(100, 128.0, beta_storage::none) == 12800.0);
  CHECK(compacted_bytes(100, 128.0, beta_storage::fp32) == 13200.0);
  CHECK(compacted_bytes(100, 72.0, beta_storage::bf16) == 7400.0);
  CHECK(compacted_bytes(3, 22.5, beta_storage::bf16) == 73.5);
  CHECK(compacted_bytes(0, 22.5, beta_storage::fp32) == 0.0);
  CHECK(tokens_within_bytes(13200.0, 128.0, beta_storage::fp32) == 100);
  CHECK(tokens_within_bytes(13199.0, 128.0, beta_storage::fp32) == 99);
  CHECK(tokens_within_bytes(73.5, 22.5, beta_storage::bf16) == 3);
  CHECK(tokens_within_bytes(73.4, 22.5, beta_storage::bf16) == 2);
  CHECK(tokens_within_bytes(10.0, 22.5, beta_storage::none) == 0);
  // Equal memory: a bf16 cache (256 bytes/token at d = 64) compacted 10x with fp32
  // biases holds as many bytes as fp8 eviction keeping ~2x the tokens.
  const double am = compacted_bytes(102, 256.0, beta_storage::fp32);
  CHECK(tokens_within_bytes(am, 128.0, beta_storage::none) == 207);  // 26520 / 128 = 207.19
  CHECK_THROWS_AS(compacted_bytes(-1, 128.0, beta_storage::none), std::invalid_argument);
  CHECK_THROWS_AS(compacted_bytes(1, 0.0, beta_storage::none), std::invalid_argument);
  CHECK_THROWS_AS(tokens_within_bytes(-1.0, 128.0, beta_storage::none), std::invalid_argument);
}

TEST_CASE("KIVI int2 with fp16 scale and zero point: 3 bits per value, and the compaction byte budget") {
  // Exact arithmetic, d = 128, group 32 (KIVI stores scale and zero point in the model
  // dtype, fp16): per token of the head, K and V each hold 128 two-bit codes (32 bytes)
  // and 128 / 32 = 4 (scale, zero) pairs of 2 + 2 bytes (16 bytes): 2 * 48 = 96 bytes
  // for 2 * 128 values = 3 bits per value (2 + 2 * 16 / 32). fp32 scales: 4 bits.
  CHECK(kvq::kv::find_scheme("kivi_int2_fp16").bits_per_value(128) == 3.0);
  CHECK(kvq::kv::find_scheme("kivi_int2").bits_per_value(128) == 4.0);
  CHECK(kvq::kv::find_scheme("kivi_int2_fp16").bits_per_value(64) == 3.0);
  // The compaction study's budget at 3 bits, n = 4096: 4096 * 96 = 393216 bytes. bf16
  // tokens with fp32 biases take 4 * 128 + 4 = 516 bytes: 762 fit (762 * 516 = 393192,
  // 763 * 516 = 393708); FP8 tokens 2 * 128 + 4 = 260 bytes: 1512 (393120; 1513: 393380).
  const double budget = 4096.0 * 3.0 * 2.0 * 128.0 / 8.0;
  CHECK(budget == 393216.0);
  CHECK(tokens_within_bytes(budget, 512.0, beta_storage::fp32) == 762);
  CHECK(compacted_bytes(762, 512.0, beta_storage::fp32) == 393192.0);
  CHECK(tokens_within_bytes(budget, 256.0, beta_storage::fp32) == 1512);
  CHECK(compacted_bytes(1512, 256.0, beta_storage::fp32) == 393120.0);
  // KIVI's own tokens fill the budget exactly: 4096 tokens of 96 bytes.
  CHECK(tokens_within_bytes(budget, 96.0, beta_storage::none) == 4096);
}

TEST_CASE("KIVI int2 fp16: the stored scale and zero point are fp16 values") {
  // Each group's scale and zero point must read back unchanged through kvq's fp16
  // encode (float_to_fp16_rn, round to nearest even), or the 16-bit count above would
  // undercount what the codec uses.
  const kvq::block::kivi_group_fp16<2> r{};
  const matrix_f x = gaussian_matrix(16, 32, 21, 1);
  for (Eigen::Index row = 0; row < x.rows(); ++row) {
    std::uint8_t codes[8];
    float scale = 0.0f, zero = 0.0f;
    float in[32];
    for (int i = 0; i < 32; ++i) in[i] = 3.7f * x(row, i) + 0.123456789f;
    r.quantize_block<kvq::block::f32_input>(in, {}, codes, &scale, &zero);
    INFO("row " << row << " scale " << scale << " zero " << zero);
    CHECK(kvq::fp16_to_float(kvq::float_to_fp16_rn(scale)) == scale);
    CHECK(kvq::fp16_to_float(kvq::float_to_fp16_rn(zero)) == zero);
    CHECK(scale > 0.0f);
  }
  // The fp32 recipe keeps fp32 scales: on the same inputs some scale is not an fp16 value.
  const kvq::block::kivi_group<2> r32{};
  int not_fp16 = 0;
  for (Eigen::Index row = 0; row < x.rows(); ++row) {
    std::uint8_t codes[8];
    float scale = 0.0f, zero = 0.0f;
    float in[32];
    for (int i = 0; i < 32; ++i) in[i] = 3.7f * x(row, i) + 0.123456789f;
    r32.quantize_block<kvq::block::f32_input>(in, {}, codes, &scale, &zero);
    not_fp16 += kvq::fp16_to_float(kvq::float_to_fp16_rn(scale)) != scale;
  }
  CHECK(not_fp16 > 0);
}
