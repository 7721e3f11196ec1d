// Compaction then quantization: codec application, bias storage, byte accounting.
#include <stdexcept>

#include <catch2/catch.hpp>

#include <kvq/compact/attention_matching.hpp>
#include <kvq/compact/eviction.hpp>
#include <kvq/compact/quantize.hpp>
#include <kvq/compact/reference.hpp>

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
