// Byte counts of the KV layer on sizes that overflow std::size_t: the planner and the
// row stores throw std::invalid_argument naming the product instead of wrapping (the
// expected failures are decided by 128-bit arithmetic on the same shapes).
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

#include <kvq/kv.hpp>

namespace kb = kvq::block;
using namespace kvq::kv;

TEST_CASE("planner: byte counts that overflow are errors, max_context stays finite", "[kv][planner][overflow]") {
  __extension__ typedef unsigned __int128 u128;  // GCC/Clang 128-bit integers: the oracle
  const u128 max = std::numeric_limits<std::size_t>::max();
  const model_shape big{"big", 1u << 20, 1u << 10, 1u << 10, false, "test"};  // 2^42 bf16 bytes per token
  // bf16: layers x heads x (K+V) x d x 2 bytes x tokens; 2^22 tokens make 2^64 bytes.
  const std::size_t tokens = std::size_t{1} << 22;
  REQUIRE(static_cast<u128>(big.layers) * big.kv_heads * 2 * big.head_dim * 2 * tokens > max);
  CHECK_THROWS_WITH(kv_bytes(big, hp_format::bf16, tokens), Catch::Contains("kvq::kv planner: KV bytes"));
  CHECK_THROWS_WITH(kv_bytes(big, kb::nvfp4_te{}, std::numeric_limits<std::size_t>::max()),
                    Catch::Contains("overflows std::size_t"));
  CHECK_THROWS_AS(kv_bytes(big, hp_format::bf16, 1000, std::numeric_limits<std::size_t>::max()),
                  std::invalid_argument);  // one page of 2^64 - 1 tokens
  // Just below the edge the count is exact.
  CHECK(kv_bytes(big, hp_format::bf16, (std::size_t{1} << 21)) == (std::size_t{1} << 63));
  // max_context searches lengths up to 2^40; those whose bytes overflow do not fit (a
  // wrapped count, 2^64 -> 0, would have fit any budget).
  const std::size_t budget = std::size_t{1} << 62;
  CHECK(max_context(big, hp_format::bf16, hp_format::bf16, budget) == (std::size_t{1} << 20));
}

TEST_CASE("row stores refuse an append whose element count overflows", "[kv][store][overflow]") {
  std::vector<float> rows(64, 1.0f);
  const std::size_t n = (std::size_t{1} << 58) + 1;  // x 64 = 2^64 + 64
  plain_row_store plain(hp_format::bf16, 64);
  CHECK_THROWS_WITH(plain.append(rows.data(), n), Catch::Contains("rows x head_dim"));
  CHECK(plain.rows() == 0);
  block_row_store<kb::nvfp4_te> blk(kb::nvfp4_te{}, 64, 1.0f);
  CHECK_THROWS_WITH(blk.append(rows.data(), n), Catch::Contains("rows x head_dim"));
  CHECK(blk.rows() == 0);
  CHECK(blk.memory_bytes() == 0);
  CHECK_THROWS_WITH(plain.append(nullptr, 1), Catch::Contains("rows is null"));
}

TEST_CASE("a scheme round trip refuses tokens x head_dim that overflows", "[kv][registry][overflow]") {
  // (2^62 + 1000) x 4 wraps to 4000: the tensor amax of a calibrated scheme would read
  // 4000 values while the store was asked for 2^62 + 1000 rows.
  std::vector<float> in(4000, 1.0f), out(4000, 0.0f);
  const std::size_t tokens = (std::size_t{1} << 62) + 1000;
  for (const char* name : {"fp8_e4m3_cal", "fp8_e4m3", "nvfp4_te"})
    CHECK_THROWS_WITH(find_scheme(name).round_trip(kv_role::key, in.data(), out.data(), tokens, 4),
                      Catch::Contains("tokens x head_dim") && Catch::Contains("overflows"));
  CHECK(out == std::vector<float>(4000, 0.0f));
}

TEST_CASE("compacted cache bytes: biases that overflow are errors", "[kv][planner][overflow]") {
  // 2^22 tokens compacted 2x keep 2^21: bf16 K+V are 2^20 layers x 2^20 heads x 2 x 2 B x
  // 2^21 = 2^63 bytes, the fp32 biases as many again: 2^64 wrapped to 0 before.
  const model_shape wide{"wide", std::size_t{1} << 20, std::size_t{1} << 20, 1, false, "test"};
  const std::size_t tokens = std::size_t{1} << 22;
  CHECK(compacted_kv_bytes(wide, hp_format::bf16, hp_format::bf16, tokens, 2.0, bias_dtype::none) ==
        (std::size_t{1} << 63));
  CHECK_THROWS_WITH(compacted_kv_bytes(wide, hp_format::bf16, hp_format::bf16, tokens, 2.0, bias_dtype::fp32),
                    Catch::Contains("overflows std::size_t"));
}
