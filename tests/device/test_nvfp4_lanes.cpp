// The warp NVFP4 kernel's lane decomposition (kvq/device/nvfp4_lanes.hpp), run on the
// CPU with two simulated lanes per block, must give the block layer's nvfp4_te codes
// and scales: the GPU kernel adds only the shuffle (a max, order-independent) and the
// hardware cvt (checked exhaustively on a GPU by tests/gpu).
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include <kvq/block.hpp>
#include <kvq/device/nvfp4_lanes.hpp>

#include "inputs.hpp"

namespace {

struct lane_result {
  std::vector<std::uint8_t> codes, scales;
};

lane_result simulate_lanes(const std::vector<float>& x, float tensor_amax, const kvq::block::nvfp4_te& s) {
  namespace lane = kvq::device::nvfp4_lane;
  const auto p = kvq::block::nvfp4_te::prepare(tensor_amax);
  const std::size_t nb = x.size() / 16;
  lane_result r;
  r.codes.assign(nb * 8, 0);
  r.scales.assign(nb, 0);
  for (std::size_t b = 0; b < nb; ++b) {
    float v[2][8];
    for (int l = 0; l < 2; ++l)
      for (int i = 0; i < 8; ++i) v[l][i] = x[b * 16 + static_cast<std::size_t>(l * 8 + i)];
    const float bamax = lane::combine_amax(lane::partial_amax(v[0]), lane::partial_amax(v[1]));
    const std::uint8_t sf = lane::scale_code(bamax, p);
    const float inv = lane::inverse(sf, s, p);
    for (int l = 0; l < 2; ++l) {
      const std::uint32_t w = lane::encode8(v[l], inv);
      for (int k = 0; k < 4; ++k) r.codes[b * 8 + static_cast<std::size_t>(l * 4 + k)] = static_cast<std::uint8_t>(w >> (8 * k));
    }
    r.scales[b] = sf;
  }
  return r;
}

}  // namespace

TEST_CASE("NVFP4 lane decomposition equals kvq::block::nvfp4_te", "[device][nvfp4]") {
  namespace kb = kvq::block;
  std::vector<std::vector<float>> inputs;
  inputs.push_back(kvq_test::kv_inputs(64, 128));
  {
    const auto f = kvq_test::float_inputs(1u << 16);  // NaN, Inf, subnormals in every block
    inputs.emplace_back(f.begin(), f.end());
  }
  for (auto rule : {kb::nvfp4_te::inverse_rule::rcp_of_product, kb::nvfp4_te::inverse_rule::enc_div_scale}) {
    kb::nvfp4_te s;
    s.inverse = rule;
    for (const auto& x : inputs) {
      const kb::buffer_sizes z = kb::sizes_of(s, x.size());
      std::vector<std::uint8_t> codes(z.code_bytes), scales(z.scales);
      const float amax = kb::quantize(s, x.data(), x.size(), kb::tensor_value::computed(), codes.data(), codes.size(),
                                      scales.data(), scales.size());
      const lane_result r = simulate_lanes(x, amax, s);
      std::size_t code_diff = 0, scale_diff = 0;
      for (std::size_t i = 0; i < codes.size(); ++i) code_diff += codes[i] != r.codes[i];
      for (std::size_t i = 0; i < scales.size(); ++i) scale_diff += scales[i] != r.scales[i];
      INFO("inverse rule " << static_cast<int>(rule) << ", " << x.size() << " elements");
      CHECK(code_diff == 0);
      CHECK(scale_diff == 0);
      // The comparison can fail: one changed element (a new block maximum) changes
      // that block's scale or codes.
      std::vector<float> y = x;
      y[16 * 9 + 3] = amax;
      const lane_result off = simulate_lanes(y, amax, s);
      std::size_t off_diff = 0;
      for (std::size_t i = 0; i < scales.size(); ++i) off_diff += scales[i] != off.scales[i];
      for (std::size_t i = 0; i < codes.size(); ++i) off_diff += codes[i] != off.codes[i];
      CHECK(off_diff > 0);
    }
  }
}

TEST_CASE("NVFP4 lane amax ignores NaN and combines in either order", "[device][nvfp4]") {
  namespace lane = kvq::device::nvfp4_lane;
  const float nan = kvq::bit_cast<float>(0x7FC00000u);
  const float a[8] = {1.0f, -3.5f, nan, 0.25f, -0.0f, 2.0f, nan, 3.0f};
  const float b[8] = {nan, nan, nan, nan, nan, nan, nan, nan};
  CHECK(lane::partial_amax(a) == 3.5f);
  CHECK(lane::partial_amax(b) == 0.0f);
  CHECK(lane::combine_amax(lane::partial_amax(a), lane::partial_amax(b)) ==
        lane::combine_amax(lane::partial_amax(b), lane::partial_amax(a)));
}
