// TransformerEngine's 2D (16x16-tile) and per-token (row-scaled) NVFP4 recipes
// (kvq/block/nvfp4_matrix.hpp) against vectors from TE's own PyTorch reference quantizer
// (tests/data/te-nvfp4, made by scripts/gen_te_nvfp4_vectors.py), plus structural checks.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvq/block.hpp>
#include <kvq/block/nvfp4_matrix.hpp>
#include <kvq/format.hpp>

namespace kb = kvq::block;

namespace {

struct te_case {
  std::uint32_t rows = 0, cols = 0;
  std::vector<float> x, amax;
  std::vector<std::uint8_t> codes, scales;  // scales: TE's layout, one byte per row and 16 columns
};

te_case load(const std::string& name) {
  const std::string path = std::string(KVQ_TE_NVFP4_DIR) + "/" + name + ".bin";
  std::ifstream f(path, std::ios::binary);
  REQUIRE(f.good());
  std::vector<char> buf((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  te_case c;
  std::uint32_t n_amax = 0;
  REQUIRE(buf.size() >= 12);
  std::memcpy(&c.rows, buf.data(), 4);
  std::memcpy(&c.cols, buf.data() + 4, 4);
  std::memcpy(&n_amax, buf.data() + 8, 4);
  const std::size_t n = std::size_t(c.rows) * c.cols;
  REQUIRE(buf.size() == 12 + 4 * n + 4 * std::size_t(n_amax) + n / 2 + n / 16);
  const char* p = buf.data() + 12;
  c.x.resize(n);
  std::memcpy(c.x.data(), p, 4 * n);
  p += 4 * n;
  c.amax.resize(n_amax);
  std::memcpy(c.amax.data(), p, 4 * std::size_t(n_amax));
  p += 4 * std::size_t(n_amax);
  c.codes.assign(p, p + n / 2);
  p += n / 2;
  c.scales.assign(p, p + n / 16);
  return c;
}

bool sign_bit(float v) {
  std::uint32_t u;
  std::memcpy(&u, &v, 4);
  return (u >> 31) != 0;
}

// Element codes against TE's. The one permitted difference: TE's reference
// cast_to_fp4x2 maps a scaled -0 to code 0x0 (its `x < -0.0` is false for -0), where
// the CUDA cvt (and kvq) keep the sign, 0x8. Only an input with its sign bit set and a
// kvq code of 0x8 may show it. Returns the number of such nibbles.
std::size_t compare_codes(const te_case& c, const std::vector<std::uint8_t>& got) {
  std::size_t neg_zero = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    for (int h = 0; h < 2; ++h) {
      const unsigned k = (got[i] >> (4 * h)) & 0xFu, t = (c.codes[i] >> (4 * h)) & 0xFu;
      if (k == t) continue;
      const float xi = c.x[2 * i + h];
      INFO("element " << 2 * i + h << " x = " << xi << " kvq code " << k << " TE code " << t);
      CHECK((k == 0x8u && t == 0x0u && sign_bit(xi)));
      ++neg_zero;
    }
  }
  return neg_zero;
}

}  // namespace

TEST_CASE("nvfp4_te_2d matches TransformerEngine's reference quantizer", "[block][nvfp4_te_2d]") {
  for (const char* name : {"te_2d_48x64", "te_2d_16x32"}) {
    INFO(name);
    const te_case c = load(name);
    REQUIRE(c.amax.size() == 1);
    const std::size_t tx = c.cols / 16;
    std::vector<std::uint8_t> codes(c.x.size() / 2, 0xEE), scales(kb::nvfp4_te_2d_scale_count(c.rows, c.cols), 0xEE);
    float amax = -1.0f;
    kb::nvfp4_te_2d_quantize(c.x.data(), c.rows, c.cols, codes.data(), scales.data(), &amax);
    CHECK(amax == c.amax[0]);
    // TE stores the tile's byte once per row: every row of a tile must carry it.
    for (std::size_t r = 0; r < c.rows; ++r)
      for (std::size_t j = 0; j < tx; ++j) CHECK(int(c.scales[r * tx + j]) == int(scales[(r / 16) * tx + j]));
    compare_codes(c, codes);
    // The data must exercise the tile: some tile has a 16-element row block whose own
    // amax differs from the tile's (else 2D and 1D would coincide).
    std::vector<std::uint8_t> codes1(codes.size()), scales1(c.x.size() / 16);
    kb::quantize_rows(kb::nvfp4_te{}, c.x.data(), c.rows, c.cols, kb::tensor_value::computed(), codes1.data(),
                      codes1.size(), scales1.data(), scales1.size());
    std::size_t differ = 0;
    for (std::size_t r = 0; r < c.rows; ++r)
      for (std::size_t j = 0; j < tx; ++j) differ += scales1[r * tx + j] != scales[(r / 16) * tx + j];
    CHECK(differ > 0);
  }
}

TEST_CASE("nvfp4_te_per_token matches TransformerEngine's row-scaled reference", "[block][nvfp4_te_per_token]") {
  for (const char* name : {"te_per_token_24x64", "te_per_token_40x32"}) {
    INFO(name);
    const te_case c = load(name);
    REQUIRE(c.amax.size() == c.rows);
    std::vector<std::uint8_t> codes(c.x.size() / 2, 0xEE), scales(c.x.size() / 16, 0xEE);
    std::vector<float> row_amax(c.rows, -1.0f);
    kb::nvfp4_te_per_token_quantize(c.x.data(), c.rows, c.cols, codes.data(), scales.data(), row_amax.data());
    CHECK(row_amax == c.amax);
    CHECK(scales == c.scales);
    compare_codes(c, codes);
  }
}

TEST_CASE("nvfp4_te_2d and per_token reduce to nvfp4_te where they must", "[block][nvfp4_te_2d]") {
  // 2D: when every 16-element row block holds its tile's amax, 2D and 1D give the same
  // bits. Per-token: rows sharing one amax give the 1D recipe's bits with that amax.
  const std::size_t rows = 32, cols = 48;
  std::vector<float> x(rows * cols);
  std::uint32_t s = 12345;
  for (std::size_t i = 0; i < x.size(); ++i) {
    s = s * 1664525u + 1013904223u;
    x[i] = (static_cast<float>(s >> 8) / 16777216.0f - 0.5f) * 3.0f;  // in (-1.5, 1.5)
  }
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t b = 0; b < cols / 16; ++b) x[r * cols + b * 16 + (r % 16)] = (r & 1) ? -2.0f : 2.0f;
  std::vector<std::uint8_t> c2(rows * cols / 2), s2(kb::nvfp4_te_2d_scale_count(rows, cols));
  std::vector<std::uint8_t> c1(rows * cols / 2), s1(rows * cols / 16);
  float amax = 0.0f;
  kb::nvfp4_te_2d_quantize(x.data(), rows, cols, c2.data(), s2.data(), &amax);
  kb::quantize_rows(kb::nvfp4_te{}, x.data(), rows, cols, kb::tensor_value::computed(), c1.data(), c1.size(),
                    s1.data(), s1.size());
  CHECK(amax == 2.0f);
  CHECK(c2 == c1);
  for (std::size_t r = 0; r < rows; ++r)
    for (std::size_t b = 0; b < cols / 16; ++b) CHECK(s1[r * (cols / 16) + b] == s2[(r / 16) * (cols / 16) + b]);

  std::vector<std::uint8_t> cp(rows * cols / 2), sp(rows * cols / 16);
  std::vector<float> ra(rows);
  kb::nvfp4_te_per_token_quantize(x.data(), rows, cols, cp.data(), sp.data(), ra.data());
  for (float a : ra) CHECK(a == 2.0f);
  CHECK(cp == c1);
  CHECK(sp == s1);
}

TEST_CASE("nvfp4_te_2d / per_token dequantize as dequantize_nvfp4.cuh", "[block][nvfp4_te_2d]") {
  // x = e2m1 * ((float(SF) * amax) * fp32(1/2688)), decoded with the format layer.
  const te_case c = load("te_per_token_24x64");
  std::vector<std::uint8_t> codes(c.x.size() / 2), scales(c.x.size() / 16);
  std::vector<float> ra(c.rows), out(c.x.size());
  kb::nvfp4_te_per_token_quantize(c.x.data(), c.rows, c.cols, codes.data(), scales.data(), ra.data());
  kb::nvfp4_te_per_token_dequantize(codes.data(), scales.data(), ra.data(), c.rows, c.cols, out.data());
  const float inv2688 = static_cast<float>(1.0 / 2688.0);
  for (std::size_t i = 0; i < out.size(); ++i) {
    const std::size_t r = i / c.cols;
    const float e = kvq::decode<kvq::fmt::e2m1>(static_cast<std::uint8_t>((codes[i / 2] >> (4 * (i % 2))) & 0xF));
    const float sf = kvq::decode<kvq::fmt::e4m3>(scales[i / 16]);
    const float t = sf * ra[r];
    CHECK(out[i] == e * (t * inv2688));
  }
  const te_case d = load("te_2d_48x64");
  std::vector<std::uint8_t> c2(d.x.size() / 2), s2(kb::nvfp4_te_2d_scale_count(d.rows, d.cols));
  std::vector<float> o2(d.x.size());
  float amax = 0.0f;
  kb::nvfp4_te_2d_quantize(d.x.data(), d.rows, d.cols, c2.data(), s2.data(), &amax);
  kb::nvfp4_te_2d_dequantize(c2.data(), s2.data(), amax, d.rows, d.cols, o2.data());
  for (std::size_t i = 0; i < o2.size(); ++i) {
    const std::size_t r = i / d.cols, col = i % d.cols;
    const float e = kvq::decode<kvq::fmt::e2m1>(static_cast<std::uint8_t>((c2[i / 2] >> (4 * (i % 2))) & 0xF));
    const float sf = kvq::decode<kvq::fmt::e4m3>(s2[(r / 16) * (d.cols / 16) + col / 16]);
    CHECK(o2[i] == e * ((sf * amax) * inv2688));
  }
}

TEST_CASE("nvfp4_te_2d / per_token reject bad sizes and null buffers", "[block][nvfp4_te_2d]") {
  std::vector<float> x(32 * 32, 1.0f), out(32 * 32);
  std::vector<std::uint8_t> codes(32 * 32 / 2), scales(64);
  std::vector<float> ra(32);
  float amax = 0.0f;
  CHECK_THROWS_AS(kb::nvfp4_te_2d_quantize(x.data(), 8, 32, codes.data(), scales.data(), &amax), std::invalid_argument);
  CHECK_THROWS_AS(kb::nvfp4_te_2d_quantize(x.data(), 16, 24, codes.data(), scales.data(), &amax), std::invalid_argument);
  CHECK_THROWS_AS(kb::nvfp4_te_2d_quantize(nullptr, 16, 32, codes.data(), scales.data(), &amax), std::invalid_argument);
  CHECK_THROWS_AS(kb::nvfp4_te_2d_dequantize(codes.data(), nullptr, 1.0f, 16, 32, out.data()), std::invalid_argument);
  CHECK_THROWS_AS(kb::nvfp4_te_per_token_quantize(x.data(), 3, 20, codes.data(), scales.data(), ra.data()),
                  std::invalid_argument);
  CHECK_THROWS_AS(kb::nvfp4_te_per_token_quantize(x.data(), 3, 32, codes.data(), scales.data(), nullptr),
                  std::invalid_argument);
  CHECK_THROWS_AS(kb::nvfp4_te_per_token_dequantize(codes.data(), scales.data(), ra.data(), 1, 17, out.data()),
                  std::invalid_argument);
  CHECK_THROWS_AS(kb::nvfp4_te_per_token_quantize(x.data(), std::size_t(1) << 62, 32, codes.data(), scales.data(),
                                                  ra.data()),
                  std::invalid_argument);
  // Empty matrices are fine with null buffers.
  kb::nvfp4_te_per_token_quantize(nullptr, 0, 32, nullptr, nullptr, nullptr);
  kb::nvfp4_te_2d_quantize(nullptr, 0, 16, nullptr, nullptr, nullptr);
  // The message names the problem.
  try {
    kb::nvfp4_te_2d_quantize(x.data(), 8, 32, codes.data(), scales.data(), &amax);
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("rows 8 is not a multiple of 16") != std::string::npos);
  }
}
