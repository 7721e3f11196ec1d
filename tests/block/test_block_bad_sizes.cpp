// The block layer's checked API on sizes that overflow std::size_t and on null buffers:
// std::invalid_argument naming the problem, before anything is read, written or
// allocated (the buffers below are far smaller than the sizes claimed).
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvq/block.hpp>

namespace kb = kvq::block;

namespace {
// The huge sizes and the small buffers reach the API as run-time values: known at
// compile time, they let the optimizer warn (-Warray-bounds) about the loops the checks
// never let them reach.
std::size_t opaque(std::size_t v) {
  volatile std::size_t x = v;
  return x;
}
}  // namespace

TEST_CASE("quantize_rows refuses rows x cols that wraps around", "[block][api][overflow]") {
  std::vector<float> x(opaque(64), 1.0f);
  std::vector<std::uint8_t> codes(opaque(32), 0xAB), scales(opaque(4), 0xCD);
  // (2^60 + 4) x 16 = 2^64 + 64: wrapped, it would quantize 64 elements without a word.
  const std::size_t rows = opaque((std::size_t{1} << 60) + 4);
  CHECK_THROWS_WITH(kb::quantize_rows(kb::nvfp4_te{}, x.data(), rows, 16, kb::tensor_value::computed(), codes.data(),
                                      codes.size(), scales.data(), scales.size()),
                    Catch::Contains("quantize_rows(nvfp4_te): rows x cols = 1152921504606846980 x 16 overflows"));
  for (auto c : codes) CHECK(c == 0xAB);
  for (auto c : scales) CHECK(c == 0xCD);
}

TEST_CASE("a length whose code bits overflow is refused, whatever the buffers claim", "[block][api][overflow]") {
  std::vector<float> x(opaque(16), 1.0f);
  std::vector<std::uint8_t> codes(opaque(8)), scales(opaque(1));
  const std::size_t huge = opaque(std::numeric_limits<std::size_t>::max() / 32 * 32);  // a multiple of 16 and 32
  const std::size_t all = opaque(std::numeric_limits<std::size_t>::max());
  // 4 bits x huge elements wraps; without the check the needed byte count would be small.
  CHECK_THROWS_WITH(kb::quantize(kb::nvfp4_te{}, x.data(), huge, kb::tensor_value::given(1.0f), codes.data(), all,
                                 scales.data(), all),
                    Catch::Contains("code bits of " + std::to_string(huge) + " elements"));
  std::vector<float> out(opaque(16));
  CHECK_THROWS_WITH(kb::dequantize(kb::mxfp4_rceil{}, codes.data(), all, scales.data(), all, nullptr, 0, 1.0f,
                                   out.data(), huge),
                    Catch::Contains("overflows std::size_t"));
  kb::quantized_tensor<kb::nvfp4_te> q;
  CHECK_THROWS_WITH(q.assign(x.data(), huge), Catch::Contains("code bits"));
  CHECK(q.size() == 0);
}

TEST_CASE("null codes, scales or output buffers are refused, not written", "[block][api][null]") {
  std::vector<float> x(32, 0.5f), out(32, -7.0f);
  std::vector<std::uint8_t> codes(16, 0xAB), scales(2, 0xCD);
  CHECK_THROWS_WITH(kb::quantize(kb::nvfp4_te{}, x.data(), 32, kb::tensor_value::computed(), nullptr, 16,
                                 scales.data(), 2),
                    "kvq::block::quantize(nvfp4_te): codes buffer is null");
  CHECK_THROWS_WITH(kb::quantize(kb::mxfp8_e4m3_rceil{}, x.data(), 32, kb::tensor_value::computed(), nullptr, 32,
                                 scales.data(), 1),
                    "kvq::block::quantize(mxfp8_e4m3_rceil): codes buffer is null");
  CHECK_THROWS_WITH(kb::quantize(kb::fp8_e4m3_per_tensor{}, x.data(), 32, kb::tensor_value::computed(), nullptr, 32,
                                 nullptr, 0),
                    Catch::Contains("codes buffer is null"));
  CHECK_THROWS_WITH(kb::dequantize(kb::nvfp4_te{}, nullptr, 16, scales.data(), 2, nullptr, 0, 1.0f, out.data(), 32),
                    "kvq::block::dequantize(nvfp4_te): codes buffer is null");
  CHECK_THROWS_AS(kb::quantize(kb::nvfp4_te{}, x.data(), 32, kb::tensor_value::computed(), codes.data(), 16, nullptr, 2),
                  std::invalid_argument);
  for (float v : out) CHECK(v == -7.0f);
  for (auto c : codes) CHECK(c == 0xAB);
  for (auto c : scales) CHECK(c == 0xCD);
  // Zero elements need no buffers at all.
  CHECK_NOTHROW(kb::quantize(kb::nvfp4_te{}, x.data(), 0, kb::tensor_value::given(1.0f), nullptr, 0, nullptr, 0));
}
