// TransformerEngine's random Hadamard transform before NVFP4 (kvq/block/rht.hpp)
// against vectors from TE's PyTorch reference quantizer (tests/data/te-nvfp4, made by
// scripts/gen_te_nvfp4_vectors.py), and the transform's algebra checked exactly.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <kvq/block.hpp>
#include <kvq/block/rht.hpp>
#include <kvq/core/float16.hpp>

namespace kb = kvq::block;

namespace {

struct rht_case {
  std::uint32_t rows = 0, cols = 0, sign = 0;
  std::vector<std::uint16_t> x, y;
  float amax = 0.0f;
  std::vector<std::uint8_t> codes, scales;
};

rht_case load_rht_case(const std::string& name) {
  std::ifstream f(std::string(KVQ_TE_NVFP4_DIR) + "/" + name + ".bin", std::ios::binary);
  REQUIRE(f.good());
  std::vector<char> buf((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  rht_case c;
  REQUIRE(buf.size() >= 12);
  std::memcpy(&c.rows, buf.data(), 4);
  std::memcpy(&c.cols, buf.data() + 4, 4);
  std::memcpy(&c.sign, buf.data() + 8, 4);
  const std::size_t n = std::size_t(c.rows) * c.cols;
  REQUIRE(buf.size() == 12 + 2 * n + 2 * n + 4 + n / 2 + n / 16);
  const char* p = buf.data() + 12;
  c.x.resize(n);
  std::memcpy(c.x.data(), p, 2 * n);
  p += 2 * n;
  c.y.resize(n);
  std::memcpy(c.y.data(), p, 2 * n);
  p += 2 * n;
  std::memcpy(&c.amax, p, 4);
  p += 4;
  c.codes.assign(p, p + n / 2);
  p += n / 2;
  c.scales.assign(p, p + n / 16);
  return c;
}

struct outcome {
  std::size_t y_diff = 0, code_diff = 0, scale_diff = 0;
  bool amax_same = false;
};

outcome replay(const rht_case& c) {
  const std::size_t n = c.x.size();
  std::vector<std::uint8_t> codes(n / 2), scales(n / 16);
  std::vector<float> y(n);
  float amax = -1.0f;
  kb::nvfp4_te_rht_quantize<kb::bf16_input>(c.x.data(), c.rows, c.cols, codes.data(), scales.data(), &amax,
                                            c.sign != 0, y.data());
  outcome o;
  for (std::size_t i = 0; i < n; ++i) o.y_diff += y[i] != kvq::bf16_to_float(c.y[i]);
  for (std::size_t i = 0; i < n / 2; ++i) o.code_diff += codes[i] != c.codes[i];
  for (std::size_t i = 0; i < n / 16; ++i) o.scale_diff += scales[i] != c.scales[i];
  o.amax_same = amax == c.amax;
  return o;
}

}  // namespace

TEST_CASE("RHT + NVFP4 matches TransformerEngine's reference on bf16 randn", "[block][rht]") {
  // TE's exact RHT test draws torch.randn in bf16: blocks within 12 binades, where
  // every summation order gives the same fp32 sum (rht.hpp), so the bits must agree.
  for (const char* name : {"rht_randn_64x48", "rht_randn_nosign_32x32"}) {
    INFO(name);
    const outcome o = replay(load_rht_case(name));
    CHECK(o.y_diff == 0);
    CHECK(o.amax_same);
    CHECK(o.code_diff == 0);
    CHECK(o.scale_diff == 0);
  }
}

TEST_CASE("RHT on inputs spread over 48 binades: measured against the reference", "[block][rht]") {
  // Outside the exact range the reference's CPU matmul sums in its own order. Measured
  // (not a model claim): the count of transformed values that differ, printed; the
  // quantized bits must still agree wherever the transformed values do.
  const rht_case c = load_rht_case("rht_wide_64x48");
  const outcome o = replay(c);
  WARN("rht_wide_64x48: " << o.y_diff << " of " << c.y.size() << " transformed bf16 values differ from TE's reference; "
                          << o.code_diff << " code bytes, " << o.scale_diff << " scales differ");
  if (o.y_diff == 0) {
    CHECK(o.amax_same);
    CHECK(o.code_diff == 0);
    CHECK(o.scale_diff == 0);
  }
}

TEST_CASE("te_rht16 is an orthogonal transform with TE's signs", "[block][rht]") {
  // Exact algebra (hand-derived): T = diag(s) H / 4 with H H^T = 16 I, so T^T T = I and
  // the transform applied twice without signs is the identity (H / 4 is symmetric and
  // orthogonal). A unit vector e_k maps to row k of T: s_k * H[k][j] / 4.
  for (int k = 0; k < 16; ++k) {
    float e[16] = {};
    e[k] = 1.0f;
    float y[16];
    kb::te_rht16<kb::f32_input>(e, 1, y, true);
    for (int j = 0; j < 16; ++j) {
      int pc = 0;
      for (int b = k & j; b; b >>= 1) pc += b & 1;
      const float h = (pc & 1) ? -1.0f : 1.0f;
      const float s = (k == 3 || k == 5 || k == 6 || k == 7 || k == 8 || k == 9 || k == 10 || k == 12 || k == 14 ||
                       k == 15)
                          ? -1.0f
                          : 1.0f;  // get_wgrad_sign_vector: negative at 3, 5-10, 12, 14, 15
      CHECK(y[j] == s * h * 0.25f);
    }
  }
  float x[16], y[16], z[16];
  for (int i = 0; i < 16; ++i) x[i] = static_cast<float>(i * 3 - 20);  // small integers: every sum exact
  kb::te_rht16<kb::f32_input>(x, 1, y, false);
  kb::te_rht16<kb::f32_input>(y, 1, z, false);
  for (int i = 0; i < 16; ++i) CHECK(z[i] == x[i]);
}

TEST_CASE("nvfp4_te_rht_quantize rejects bad sizes", "[block][rht]") {
  std::vector<float> x(32 * 16, 1.0f);
  std::vector<std::uint8_t> codes(256), scales(32);
  float amax = 0.0f;
  CHECK_THROWS_AS(kb::nvfp4_te_rht_quantize(x.data(), 8, 16, codes.data(), scales.data(), &amax),
                  std::invalid_argument);
  CHECK_THROWS_AS(kb::nvfp4_te_rht_quantize(x.data(), 16, 16, codes.data(), nullptr, &amax), std::invalid_argument);
  kb::nvfp4_te_rht_quantize<kb::f32_input>(nullptr, 0, 16, nullptr, nullptr, nullptr);
}
