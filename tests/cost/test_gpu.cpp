// kvq/cost/gpu.hpp: the GPU table is complete, sourced, and consistent with itself.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include <kvq/cost.hpp>

using namespace kvq::cost;

TEST_CASE("cost: every GPU constant is positive, sourced, and FP8 doubles BF16", "[cost][gpu]") {
  for (const gpu_spec& g : gpus()) {
    INFO(g.key);
    CHECK(std::string(g.source).size() > 20);
    CHECK(g.hbm_gbps > 0);
    CHECK(g.bf16_tflops > 0);
    CHECK(g.fp32_tflops > 0);
    CHECK(g.sfu_gops > 0);
    // Every datasheet here gives FP8 at twice BF16 and FP4 at twice FP8 where they exist.
    if (g.fp8_tflops > 0) CHECK(g.fp8_tflops == Approx(2 * g.bf16_tflops).epsilon(0.01));
    if (g.fp4_tflops > 0) CHECK(g.fp4_tflops == Approx(2 * g.fp8_tflops).epsilon(0.01));
  }
  // A100: 108 SMs x 16 SFUs x 1.41 GHz.
  CHECK(find_gpu("a100").sfu_gops == Approx(2436.48));
}

