// AMD CDNA3 MFMA models (kvq/mma/mfma.hpp) against independent oracles:
// - every vector of tests/data/mma-sim/mfma_cdna3_*.txt.gz (outputs of MMA-Sim's own
//   Python model of v_mfma_f32_* on CDNA3, arXiv 2511.10909), bit for bit;
// - hand-derived cases for each part of the rule (derivations in the comments);
// - cdna3_fp32 against the C library's fma (a chain of IEEE fused multiply-adds).
#include "vectors.hpp"

#include <kvq/mma.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace kvq::mma;

const char* const kMmaSimMfmaFiles[] = {"mfma_cdna3_fp8",  "mfma_cdna3_bf16",    "mfma_cdna3_bf16_k4", "mfma_cdna3_fp16",
                              "mfma_cdna3_fp16_k4", "mfma_cdna3_xf32", "mfma_cdna3_fp32"};

std::uint32_t word(mfma_preset p, mfma_input fa, mfma_input fb, const std::vector<float>& a,
                   const std::vector<float>& b, float c) {
  return kvq_test::float_to_word(mfma_dot(p, fa, fb, a, b, c));
}

float p2(int e) { return std::ldexp(1.0f, e); }

}  // namespace

TEST_CASE("every MMA-Sim CDNA3 MFMA vector reproduces bit for bit", "[mma][mfma]") {
  for (const char* name_of_file : kMmaSimMfmaFiles) {
    const auto lines = kvq_test::read_gz_lines(std::string(KVQ_MMASIM_VECTORS) + "/" + name_of_file + ".txt.gz");
    REQUIRE(lines.size() >= 200);
    int mismatches = 0;
    std::string first;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const vector_case v = parse_case(lines[i]);  // kvq/mma/text.hpp
      REQUIRE(v.mfma);
      REQUIRE(v.has_d);
      REQUIRE(std::string("mfma_") + name(v.preset) == name_of_file);
      const std::uint32_t want = kvq_test::float_to_word(v.d);
      const std::uint32_t got = word(v.preset, v.a_input, v.b_input, v.a, v.b, v.c);
      if (got != want && ++mismatches <= 3) {
        char buf[96];
        std::snprintf(buf, sizeof buf, " line %zu: got %08x want %08x;", i + 1, got, want);
        first += buf;
      }
    }
    INFO(name_of_file << ":" << first);
    CHECK(mismatches == 0);
  }
}

TEST_CASE("hand-derived CDNA3 MFMA cases", "[mma][mfma]") {
  const mfma_input bf = mfma_input::bf16, e4 = mfma_input::e4m3fnuz, e5 = mfma_input::e5m2fnuz;
  const float c1 = 1.0f + p2(-23);  // 0x3f800001, last bit odd
  // Products 2^-24 and -2^-60: E = -24, window 2^-48, so -2^-60 truncates to 0. The sum
  // 2^-24 joins c = 1 + 2^-23 (M = 0) exactly: 1 + 2^-23 + 2^-24 is a tie, nearest even
  // gives 1 + 2^-22 (0x3f800002); the correctly rounded result would be 0x3f800001.
  CHECK(word(mfma_preset::cdna3_bf16, bf, bf, {p2(-12), p2(-30)}, {p2(-12), -p2(-30)}, c1) == 0x3f800002u);
  // Products -2^-24 and 2^-32 (exact in the window): s = -2^-24 + 2^-32 = -127.5 units of
  // 2^-31, rounded down to -128: c + s = 1 + 2^-23 - 2^-24 is a tie, even gives 1.0
  // (0x3f800000). Truncation toward zero (-127) would give 0x3f800001.
  CHECK(word(mfma_preset::cdna3_bf16, bf, bf, {p2(-12), p2(-16)}, {-p2(-12), p2(-16)}, c1) == 0x3f800000u);
  // A zero operand counts with exponent -126: 0 × 2^127 has exponent 1 = M, so c =
  // 0.5 + 2^-24 (0x3f000001) is rounded down to a multiple of 2^(1-24): 0.5 (0x3f000000).
  CHECK(word(mfma_preset::cdna3_bf16, bf, bf, {0.0f}, {p2(127)}, p2(-1) + p2(-24)) == 0x3f000000u);
  CHECK(word(mfma_preset::cdna3_bf16, bf, bf, {0.0f}, {1.0f}, p2(-1) + p2(-24)) == 0x3f000001u);
  // fp8: c = -2^-26 lies more than 25 binades below M = 0 (the product 1): dropped, d = 1.
  // bf16 keeps it: -2^-26 rounded down to a multiple of 2^-24 is -2^-24, d = 1 - 2^-24.
  CHECK(word(mfma_preset::cdna3_fp8, e4, e4, {1.0f}, {1.0f}, -p2(-26)) == 0x3f800000u);
  CHECK(word(mfma_preset::cdna3_bf16, bf, bf, {1.0f}, {1.0f}, -p2(-26)) == 0x3f7fffffu);
  // fp8 halves: 1·1 (index 0, even half) and 2^-15·(-2^-15) = -2^-30 (index 1, odd half,
  // exact there); merging rounds the odd half down to -2^-24: d = 1 - 2^-24 (0x3f7fffff).
  // At index 2 both products share the even half, -2^-30 truncates toward zero: d = 1.
  CHECK(word(mfma_preset::cdna3_fp8, e5, e5, {1.0f, p2(-15)}, {1.0f, -p2(-15)}, 0.0f) == 0x3f7fffffu);
  CHECK(word(mfma_preset::cdna3_fp8, e5, e5, {1.0f, 0.0f, p2(-15)}, {1.0f, 0.0f, -p2(-15)}, 0.0f) == 0x3f800000u);
  // Steps of 4 products: the -2^-30 in the second step (index 4) is added to the fp32
  // d = 1 of the first step: 1 - 2^-30 rounds to 1 (bf16_k4); in one step of 8 it
  // truncates away as well (window 2^-24): both 1. With c = 1 + 2^-23 rounded-down
  // 1 + 2^-23 - 2^-31 (k4, M = 0) rounds back to 0x3f800001.
  const std::vector<float> a8{1, 0, 0, 0, p2(-15), 0, 0, 0}, b8{1, 0, 0, 0, -p2(-15), 0, 0, 0};
  CHECK(word(mfma_preset::cdna3_bf16_k4, bf, bf, a8, b8, 0.0f) == 0x3f800000u);
  // Overflow and special values: a bf16 product of 2^128 is Inf; Inf - Inf is NaN.
  CHECK(word(mfma_preset::cdna3_bf16, bf, bf, {p2(127)}, {2.0f}, 0.0f) == 0x7f800000u);
  CHECK(word(mfma_preset::cdna3_bf16, bf, bf, {p2(127), p2(127)}, {2.0f, -2.0f}, 0.0f) == 0x7fffffffu);
  CHECK(word(mfma_preset::cdna3_fp8, e4, e4, {std::nanf("")}, {1.0f}, 0.0f) == 0x7fffffffu);
  // xf32 truncates the operands to 10 fraction bits: (1 + 2^-11)·1 = 1, while fp32 keeps it.
  CHECK(word(mfma_preset::cdna3_xf32, mfma_input::fp32, mfma_input::fp32, {1.0f + p2(-11)}, {1.0f}, 0.0f) ==
        0x3f800000u);
  CHECK(word(mfma_preset::cdna3_fp32, mfma_input::fp32, mfma_input::fp32, {1.0f + p2(-11)}, {1.0f}, 0.0f) ==
        0x3f801000u);  // 1 + 2^-11: fraction bit 12
  // An exact zero sum is +0 in a fused step, even from -0 operands and c = -0.
  CHECK(word(mfma_preset::cdna3_bf16, bf, bf, {-0.0f}, {1.0f}, -0.0f) == 0u);
}

TEST_CASE("cdna3_fp32 is a chain of IEEE fused multiply-adds", "[mma][mfma]") {
  std::mt19937 rng(20261202);
  std::uniform_int_distribution<std::uint32_t> bits;
  std::uniform_int_distribution<int> ex(-40, 40);
  for (int t = 0; t < 20000; ++t) {
    std::vector<float> a(4), b(4);
    float c;
    auto gen = [&] {
      const std::uint32_t u = bits(rng);
      if (t % 3 == 0) return kvq_test::word_to_float(u);  // any float: NaN, Inf, subnormals
      return std::ldexp(kvq_test::word_to_float((u & 0x807fffffu) | 0x3f800000u), ex(rng));
    };
    for (int i = 0; i < 4; ++i) {
      a[i] = gen();
      b[i] = gen();
    }
    c = gen();
    if (t % 5 == 0) b[1] = -a[0] * b[0] / a[1];  // cancellation
    float want = c;
    for (int i = 0; i < 4; ++i) want = std::fma(a[i], b[i], want);
    const std::uint32_t got = word(mfma_preset::cdna3_fp32, mfma_input::fp32, mfma_input::fp32, a, b, c);
    if (std::isnan(want)) {
      REQUIRE(got == 0x7fffffffu);
    } else {
      INFO("t = " << t);
      REQUIRE(got == kvq_test::float_to_word(want));
    }
  }
}

TEST_CASE("mfma_dot argument checks", "[mma][mfma]") {
  const mfma_input bf = mfma_input::bf16, e4 = mfma_input::e4m3fnuz;
  CHECK_THROWS_WITH(mfma_dot(mfma_preset::cdna3_fp8, bf, e4, {1.0f}, {1.0f}, 0.0f),
                    Catch::Contains("cdna3_fp8 takes e4m3fnuz or e5m2fnuz operands, not bf16"));
  CHECK_THROWS_WITH(mfma_dot(mfma_preset::cdna3_bf16, bf, bf, {1.0f, 2.0f}, {1.0f}, 0.0f),
                    Catch::Contains("a has 2 elements, b has 1"));
  CHECK_THROWS_WITH(mfma_dot(mfma_preset::cdna3_bf16, bf, bf, {1.0f + p2(-8)}, {1.0f}, 0.0f),
                    Catch::Contains("a[0] is not a bf16 value"));
  CHECK_THROWS_WITH(mfma_dot(mfma_preset::cdna3_fp8, e4, e4, {1.0f}, {256.0f}, 0.0f),
                    Catch::Contains("b[0] is not a e4m3fnuz value"));
  CHECK_THROWS_WITH(mfma_dot(mfma_preset::cdna3_fp8, e4, e4, {1.0f}, {INFINITY}, 0.0f),
                    Catch::Contains("b[0] is not a e4m3fnuz value"));
  CHECK(mfma_dot(mfma_preset::cdna3_fp8, e4, e4, {240.0f}, {p2(-10)}, 0.0f) == 240.0f * p2(-10));
  CHECK_THROWS_WITH(parse_mfma_preset("cdna3_fp64"), Catch::Contains("unknown MFMA preset 'cdna3_fp64'"));
  CHECK_THROWS_WITH(parse_mfma_input("e4m3"), Catch::Contains("unknown MFMA operand format 'e4m3'"));
}
