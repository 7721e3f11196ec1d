// kvq/cost/shape.hpp: the shapes and their parameter counts by hand.
#include <catch2/catch.hpp>

#include <stdexcept>
#include <string>

#include <kvq/cost.hpp>

using namespace kvq::cost;

TEST_CASE("cost: SmolLM2-135M shape and parameter counts", "[cost][shape]") {
  const model_shape& m = find_shape("smollm2-135m");
  CHECK(m.layers == 30);
  CHECK(m.q_heads == 9);
  CHECK(m.kv_heads == 3);
  CHECK(m.head_dim == 64);
  // Q and O: 576 x 576 each, K and V: 576 x 192 each -> 2 * 331776 + 2 * 110592 = 884736.
  CHECK(m.attn_params() == 884736.0);
  // SwiGLU: 3 x 576 x 1536 = 2654208.
  CHECK(m.mlp_params_active() == 2654208.0);
  CHECK(m.mlp_params_stored() == 2654208.0);
  // MoE: glm-moe passes a token through 8 routed + 1 shared experts of width 1408 and
  // stores 128 + 1 of them: 3 x 4096 x 9 x 1408 and 3 x 4096 x 129 x 1408.
  const model_shape& g = find_shape("glm-moe");
  CHECK(g.mlp_params_active() == 3.0 * 4096 * 9 * 1408);
  CHECK(g.mlp_params_stored() == 3.0 * 4096 * 129 * 1408);
  CHECK_THROWS_AS(find_shape("gpt5"), std::invalid_argument);
  CHECK_THROWS_AS(find_gpu("tpu"), std::invalid_argument);
}

