// The memory planner's count of compacted caches: kept tokens x the format's bytes per
// token (paged) + one score bias per kept token per KV head per layer. Expected byte
// counts are worked out by hand in the comments.
#include <catch2/catch.hpp>

#include <stdexcept>

#include <kvq/kv.hpp>

using namespace kvq::kv;

namespace {
// 2 layers x 1 KV head x head_dim 64 (K and V): fp8_e4m3 stores 2 x 2 x 64 = 256 code
// bytes per token plus one fp32 tensor scale per layer for K and for V (16 bytes).
const model_shape tiny{"tiny", 2, 1, 64, false, "test"};
}  // namespace

TEST_CASE("compacted_tokens is floor(n / R), at least one, for 1 <= R < n", "[kv][planner][compaction]") {
  CHECK(compacted_tokens(1000, 10.0) == 100);
  CHECK(compacted_tokens(1000, 3.0) == 333);
  CHECK(compacted_tokens(1000, 1.0) == 1000);
  CHECK(compacted_tokens(1000, 999.5) == 1);
  CHECK(compacted_tokens(131072, 50.0) == 2621);  // 131072 / 50 = 2621.44
  CHECK_THROWS_WITH(compacted_tokens(1000, 1000.0), Catch::Contains("< the context of 1000 tokens"));
  CHECK_THROWS_WITH(compacted_tokens(1000, 0.0), Catch::Contains(">= 1"));
  CHECK_THROWS_WITH(compacted_tokens(1000, 0.5), Catch::Contains(">= 1"));
  CHECK_THROWS_WITH(compacted_tokens(1, 1.0), Catch::Contains("at least 2 tokens"));
}

TEST_CASE("compacted cache bytes: kept tokens in the format plus the biases", "[kv][planner][compaction]") {
  const kv_format fp8 = format_of(find_scheme("fp8_e4m3"));
  // 1000 tokens / 10 = 100 kept: 100 x 256 + 16 = 25616 bytes; biases 100 x 2 layers x 1
  // head x 4 bytes (fp32) = 800, x 2 bytes (bf16) = 400.
  CHECK(kv_bytes(tiny, fp8, 100) == 25616);
  CHECK(compacted_kv_bytes(tiny, fp8, fp8, 1000, 10.0, bias_dtype::none) == 25616);
  CHECK(compacted_kv_bytes(tiny, fp8, fp8, 1000, 10.0, bias_dtype::fp32) == 26416);
  CHECK(compacted_kv_bytes(tiny, fp8, fp8, 1000, 10.0, bias_dtype::bf16) == 26016);
  // Pages of 16 tokens: 100 kept tokens hold 7 pages = 112 token slots: 112 x 256 + 16 +
  // 800 (the biases are not paged) = 29488.
  CHECK(compacted_kv_bytes(tiny, fp8, fp8, 1000, 10.0, bias_dtype::fp32, 16) == 29488);
  // bf16: 2 x 2 x 64 x 2 = 512 bytes per token, no tensor value; 333 kept: 170496 + 333 x
  // 2 x 4 = 2664 -> 173160.
  const kv_format bf16 = format_of(find_scheme("bf16"));
  CHECK(compacted_kv_bytes(tiny, bf16, bf16, 1000, 3.0, bias_dtype::fp32) == 173160);
  // Llama-3.1-8B, NVFP4 (36864 bytes per token), 128k tokens / 4 = 32768 kept:
  // 32768 x 36864 + 32 x 2 x 4 (tensor scales) = 1207959808; biases 32768 x 32 layers x
  // 8 heads x 4 = 33554432 -> 1241514240.
  const kv_format nvfp4 = format_of(find_scheme("nvfp4_te"));
  CHECK(compacted_kv_bytes(presets::llama31_8b, nvfp4, nvfp4, 131072, 4.0, bias_dtype::fp32) == 1241514240u);
  // Ratio 1 with no biases is the plain cache.
  CHECK(compacted_kv_bytes(tiny, fp8, fp8, 1000, 1.0, bias_dtype::none, 16) == kv_bytes(tiny, fp8, 1000, 16));
  CHECK_THROWS_WITH(compacted_kv_bytes(presets::deepseek_v3, bf16, bf16, 1000, 2.0, bias_dtype::fp32),
                    Catch::Contains("MLA"));
  CHECK(bias_bytes(bias_dtype::fp32) == 4);
  CHECK(bias_bytes(bias_dtype::bf16) == 2);
  CHECK(bias_bytes(bias_dtype::none) == 0);
}
