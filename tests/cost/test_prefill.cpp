// kvq/cost/prefill.hpp against hand arithmetic: byte counts of the store, attention
// FLOPs, the roofline of one kernel, zero overhead for bf16, the shape of the overhead in L.
#include <catch2/catch.hpp>

#include <cmath>
#include <stdexcept>
#include <string>

#include <kvq/cost.hpp>

using namespace kvq::cost;

TEST_CASE("cost: bytes the store writes equal the hand count", "[cost][store]") {
  const model_shape& m = find_shape("smollm2-135m");
  // fp8_e4m3: one byte per value, 3 KV heads x (K, V) x 64 values x 1000 tokens.
  CHECK(cache_bytes(m, describe_scheme("fp8_e4m3", 64), 1000) == 3.0 * 2 * 64 * 1000);
  // bf16: two bytes per value.
  CHECK(cache_bytes(m, describe_scheme("bf16", 64), 1000) == 3.0 * 2 * 64 * 1000 * 2);
  // NVFP4: 32 code bytes + 4 one-byte scales per 64 values = 36 bytes per head row.
  CHECK(cache_bytes(m, describe_scheme("nvfp4_vllm", 64), 1000) == 3.0 * 2 * 36 * 1000);
  CHECK(describe_scheme("nvfp4_vllm", 64).bits == 4.5);
  // A fused store is one memory-bound kernel: read 2 bytes per new value, write the cache.
  const gpu_spec& g = find_gpu("h100");
  const std::size_t L = 1 << 20;
  const double values = 2.0 * L * 3 * 64;
  CHECK(store_time(g, m, describe_scheme("fp8_e4m3", 64), store_design::fused, L) ==
        Approx((values * 2 + values * 1) / 3350e9));
  CHECK(store_time(g, m, describe_scheme("bf16", 64), store_design::fused, L) == Approx(values * 4 / 3350e9));
  // Unfused: per K and V a clamp pass (4 bytes per value) and a cast pass (2 + 1), then
  // the store of the FP8 bytes (1 + 1): 4 + 3 + 2 = 9 bytes per value, all memory-bound.
  CHECK(store_time(g, m, describe_scheme("fp8_e4m3", 64), store_design::unfused, L) == Approx(values * 9 / 3350e9));
}

TEST_CASE("cost: attention FLOPs and the roofline of one kernel", "[cost][attention]") {
  const model_shape& m = find_shape("llama-3.1-8b");
  // 4 L^2 Hq d / 2 under a causal mask.
  CHECK(attention_flops(m, 1024.0) == 4.0 * 1024 * 1024 * 32 * 128 / 2);
  CHECK(attention_flops(m, 1024.0, false) == 4.0 * 1024 * 1024 * 32 * 128);
  // Re-conversions: Hq x (L / 128 tiles) x (L / 2 prefix) x 2 d = 32 x 8 x 512 x 256.
  CHECK(dequant_values(m, 1024.0, 128) == 32.0 * 8 * 512 * 256);
  const gpu_spec& g = find_gpu("a100");
  CHECK(kernel_time(0.0, 0.0, g) == Approx(3e-6));                 // launch floor
  CHECK(kernel_time(1.0, 2039e9, g) == Approx(1.0));               // 1 s of compute = 1 s of bytes
  CHECK(kernel_time(0.5, 2.0 * 2039e9, g) == Approx(2.0));         // memory-bound
  // bf16 attention at large L, A100, calibration eta = 0.5: MMA 2 L^2 Hq d / (312e12 * 0.5)
  // plus one exponential per unmasked score at 108 x 16 x 1.41e9 per second.
  calibration c;
  c.eta_tensor = 0.5;
  const double L = 65536.0;
  const double expect = 2.0 * L * L * 32 * 128 / (312e12 * 0.5) + 0.5 * L * L * 32 / (108 * 16 * 1.41e9);
  CHECK(attention_time(g, m, describe_scheme("bf16", 128), read_path::dequant, L, c) == Approx(expect));
}

TEST_CASE("cost: a bf16 cache costs nothing, whatever the design", "[cost][overhead]") {
  const calibration& c = default_calibration();
  for (const char* gk : {"a100", "h100", "b200", "rtx-pro-6000"})
    for (const char* mk : {"smollm2-135m", "llama-3.1-8b", "glm-moe"}) {
      const model_shape& m = find_shape(mk);
      const scheme_cost b = describe_scheme("bf16", m.head_dim);
      for (std::size_t L : {1024u, 131072u}) {
        CHECK(overhead(find_gpu(gk), m, b, store_design::unfused, read_path::dequant, L, c) == 0.0);
        CHECK(overhead(find_gpu(gk), m, b, store_design::fused, read_path::fresh, L, c) == 0.0);
      }
    }
}

TEST_CASE("cost: shapes of the overhead in L", "[cost][overhead]") {
  const calibration& c = default_calibration();
  const gpu_spec& g = find_gpu("h100");
  const model_shape& m = find_shape("llama-3.1-8b");
  const scheme_cost fp8 = describe_scheme("fp8_e4m3", 128);
  // Dequantize-in-tile: conversions scale as L^2 like the MMAs, so the overhead rises with
  // L towards the ratio of the L^2 terms and stays below it.
  const double lim = overhead_limit(g, m, fp8, read_path::dequant, c);
  double prev = -1;
  for (std::size_t L : {1024u, 8192u, 65536u, 1048576u}) {
    const double o = overhead(g, m, fp8, store_design::fused, read_path::dequant, L, c);
    CHECK(o > prev);
    CHECK(o < lim);
    prev = o;
  }
  // The limit is the attention ratio: conversions over MMA + exponentials.
  const double Lb = 16777216.0;
  const double mma = 2.0 * Lb * Lb * 32 * 128 / (989.5e12 * c.eta_tensor);
  const double ex = 0.5 * Lb * Lb * 32 / (132 * 16 * 1.98e9);
  const double conv = 32.0 * (Lb / 128) * (Lb / 2) * 256 * fp8.dequant_ops * c.dequant_slots / (66.9e12 / 2);
  CHECK(lim == Approx(conv / (mma + ex)).epsilon(1e-6));
  // An unfused store adds a cost linear in L (plus launches) to a prefill that grows as
  // L^2: at long L its share falls.
  const double u1 = overhead(g, m, fp8, store_design::unfused, read_path::fresh, 8192, c);
  const double u2 = overhead(g, m, fp8, store_design::unfused, read_path::fresh, 131072, c);
  CHECK(u1 > 0);
  CHECK(u2 < u1);
  // FP8 MMAs: faster than bf16 at long L.
  CHECK(overhead(g, m, fp8, store_design::fused, read_path::fp8_mma, 131072, c) < 0);
  // No FP8 tensor cores on A100; NVFP4 codes are not FP8.
  CHECK_THROWS_AS(prefill(find_gpu("a100"), m, fp8, store_design::fused, read_path::fp8_mma, 1024, c),
                  std::invalid_argument);
  CHECK_THROWS_AS(prefill(g, m, describe_scheme("nvfp4_vllm", 128), store_design::fused, read_path::fp8_mma, 1024, c),
                  std::invalid_argument);
}

TEST_CASE("cost: structural dequantize counts", "[cost][scheme]") {
  CHECK(describe_scheme("bf16", 128).dequant_ops == 0.0);
  CHECK(describe_scheme("fp8_e4m3", 128).dequant_ops == 1.0);                 // cvt x2 + prmt
  CHECK(describe_scheme("nvfp4_vllm", 128).dequant_ops == 1.0 + 0.5 + 0.5 + 1.0 / 16);  // + unpack + scale
  CHECK_THROWS_AS(describe_scheme("nvfp3", 128), std::invalid_argument);
}
