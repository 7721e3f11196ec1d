// Block-scaled tensor-core MMA (kvq/mma/block_scale.hpp) against independent oracles:
// - every vector of tests/data/mma-sim/ (outputs of MMA-Sim's own Python models of
//   tcgen05.mma and mma.sync block_scale, arXiv 2511.10909), bit for bit;
// - the recorded B200 fp8 inner products (tests/data/tensor-core-vectors/), through
//   kind::mxf8f6f4 with unit scales and c_entry::separate, bit for bit;
// - exact arithmetic: results that are exact in fp32 whatever the rounding.
#include "vectors.hpp"

#include <kvq/mma.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace kvq::mma;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t i = 0;
  for (;;) {
    const std::size_t j = s.find(sep, i);
    out.push_back(s.substr(i, j == std::string::npos ? std::string::npos : j - i));
    if (j == std::string::npos) return out;
    i = j + 1;
  }
}

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  for (const auto& w : split(s, ' '))
    if (!w.empty()) out.push_back(w);
  return out;
}

const char* const kFiles[] = {
    "tcgen05_mxf8f6f4_ue8m0_b32",   "tcgen05_mxf4nvf4_ue8m0_b32",   "tcgen05_mxf4nvf4_ue8m0_b16",
    "tcgen05_mxf4nvf4_ue4m3_b16",   "mma_sm120_mxf8f6f4_ue8m0_b32", "mma_sm120_mxf4nvf4_ue8m0_b32",
    "mma_sm120_mxf4nvf4_ue4m3_b16",
};

}  // namespace

TEST_CASE("every MMA-Sim block-scaled vector reproduces bit for bit", "[mma][block_scale]") {
  for (const char* name : kFiles) {
    const auto lines = kvq_test::read_gz_lines(std::string(KVQ_MMASIM_VECTORS) + "/" + name + ".txt.gz");
    REQUIRE(lines.size() >= 100);
    int mismatches = 0;
    std::string first;
    for (std::size_t i = 0; i < lines.size(); ++i) {
      const auto f = split(lines[i], '|');
      REQUIRE(f.size() == 7);
      const auto head = words(f[0]);
      REQUIRE(head.size() == 5);
      const block_scale_params p =
          get_block_scale_preset(parse_block_scale_kind(head[0]), parse_scale_format(head[1]), std::stoi(head[2]));
      const element_format fa = parse_element_format(head[3]), fb = parse_element_format(head[4]);
      const auto a = kvq_test::parse_hex_words(f[1]);
      const auto b = kvq_test::parse_hex_words(f[2]);
      const auto sa = kvq_test::parse_hex_words(f[3]);
      const auto sb = kvq_test::parse_hex_words(f[4]);
      const auto c = kvq_test::parse_hex_words(f[5]);
      const auto d = words(f[6]);
      REQUIRE(c.size() == 1);
      REQUIRE(d.size() == 1);
      const std::uint32_t want = static_cast<std::uint32_t>(std::stoul(d[0], nullptr, 16));
      const std::uint32_t got = kvq_test::float_to_word(block_scale_dot(p, fa, fb, a, b, sa, sb, c[0]));
      if (got != want && ++mismatches <= 3) {
        char buf[96];
        std::snprintf(buf, sizeof buf, " line %zu: got %08x want %08x;", i + 1, got, want);
        first += buf;
      }
    }
    INFO(name << ": " << mismatches << " of " << lines.size() << " cases differ" << first);
    CHECK(mismatches == 0);
  }
}

TEST_CASE("mxf8f6f4 with unit scales and c_entry::separate reproduces the recorded B200 fp8 data",
          "[mma][block_scale]") {
  // The hardware records of unscaled tcgen05 kind::f8f6f4 (Khattak & Mikaitis): with unit
  // scales the block-scaled rule must agree with them when c enters separately.
  for (const char* fmt : {"E4M3", "E5M2"}) {
    const std::string base = std::string(KVQ_TENSOR_CORE_VECTORS) + "/B200/" + fmt + "/";
    const auto A = kvq_test::read_gz_lines(base + "a_B200_" + fmt + ".txt.gz");
    const auto B = kvq_test::read_gz_lines(base + "b_B200_" + fmt + ".txt.gz");
    const auto C = kvq_test::read_gz_lines(base + "c_B200_fp32.txt.gz");
    const auto D = kvq_test::read_gz_lines(base + "d_B200_fp32.txt.gz");
    REQUIRE(A.size() == 5000);
    block_scale_params p = get_block_scale_preset(block_scale_kind::mxf8f6f4, scale_format::ue8m0, 32);
    p.c_mode = c_entry::separate;
    const element_format ef = std::string(fmt) == "E4M3" ? element_format::e4m3 : element_format::e5m2;
    const std::vector<float> one{1.0f};
    int separate_mismatches = 0, aligned_mismatches = 0;
    block_scale_params pa = p;
    pa.c_mode = c_entry::aligned;
    for (std::size_t i = 0; i < A.size(); ++i) {
      const auto a = kvq_test::parse_hex_words(A[i]);
      const auto b = kvq_test::parse_hex_words(B[i]);
      const float c = kvq_test::word_to_float(kvq_test::parse_binary_word(C[i]));
      const std::uint32_t want = kvq_test::parse_binary_word(D[i]);
      if (kvq_test::float_to_word(block_scale_dot(p, ef, ef, a, b, one, one, c)) != want) ++separate_mismatches;
      if (kvq_test::float_to_word(block_scale_dot(pa, ef, ef, a, b, one, one, c)) != want) ++aligned_mismatches;
    }
    INFO(fmt << ": separate " << separate_mismatches << ", aligned (MMA-Sim's rule) " << aligned_mismatches
              << " of 5000 differ");
    CHECK(separate_mismatches == 0);
    // MMA-Sim's kind::f8f6f4 model (c aligned, toward zero) differs from these records on
    // 1793 (E4M3) and 1764 (E5M2) lines; the rule re-derived here must differ on the same count.
    CHECK(aligned_mismatches == (std::string(fmt) == "E4M3" ? 1793 : 1764));
  }
}

TEST_CASE("block-scaled results that are exact in fp32", "[mma][block_scale]") {
  const block_scale_params nv = get_block_scale_preset(block_scale_kind::mxf4nvf4, scale_format::ue4m3, 16);
  std::vector<float> a(64, 6.0f), b(64, 6.0f), s(4, 448.0f);
  // 64 × 36 × 448² = 462422016 = 0x1B900000 · 2^... exact in 24 bits.
  CHECK(block_scale_dot(nv, element_format::e2m1, element_format::e2m1, a, b, s, s, 0.0f) ==
        static_cast<float>(64.0 * 36.0 * 448.0 * 448.0));
  const block_scale_params mx = get_block_scale_preset(block_scale_kind::mxf8f6f4, scale_format::ue8m0, 32);
  std::vector<float> x(32, 1.5f), y(32, -2.0f), sx{std::ldexp(1.0f, 10)}, sy{std::ldexp(1.0f, -3)};
  CHECK(block_scale_dot(mx, element_format::e4m3, element_format::e3m2, x, y, sx, sy, 5.0f) ==
        static_cast<float>(32 * -3.0 * 128.0 + 5.0));
  // Chained over K = 64: two instructions, d of the first is c of the second.
  std::vector<float> x2(64, 1.0f), y2(64, 0.5f), s2{1.0f, 2.0f};
  CHECK(block_scale_dot(mx, element_format::e2m3, element_format::e2m1, x2, y2, s2, s2, 0.0f) == 16.0f + 64.0f);
}

TEST_CASE("block-scaled host API rejects bad input", "[mma][block_scale]") {
  const block_scale_params nv = get_block_scale_preset(block_scale_kind::mxf4nvf4, scale_format::ue4m3, 16);
  std::vector<float> a(64, 1.0f), s(4, 1.0f);
  CHECK_THROWS_AS(get_block_scale_preset(block_scale_kind::mxf4nvf4, scale_format::ue4m3, 32), std::invalid_argument);
  CHECK_THROWS_AS(get_block_scale_preset(block_scale_kind::mxf8f6f4, scale_format::ue8m0, 16), std::invalid_argument);
  CHECK_THROWS_AS(parse_element_format("e3m3"), std::invalid_argument);
  CHECK_THROWS_AS(parse_scale_format("ue5m3"), std::invalid_argument);
  CHECK_THROWS_AS(parse_block_scale_kind("mxf6"), std::invalid_argument);
  // wrong operand format for the kind, a value outside e2m1, a non-ue4m3 scale, sizes
  CHECK_THROWS_AS(block_scale_dot(nv, element_format::e4m3, element_format::e2m1, a, a, s, s, 0.0f),
                  std::invalid_argument);
  std::vector<float> bad = a;
  bad[5] = 2.5f;
  CHECK_THROWS_AS(block_scale_dot(nv, element_format::e2m1, element_format::e2m1, bad, a, s, s, 0.0f),
                  std::invalid_argument);
  std::vector<float> neg = s;
  neg[1] = -1.0f;
  CHECK_THROWS_AS(block_scale_dot(nv, element_format::e2m1, element_format::e2m1, a, a, neg, s, 0.0f),
                  std::invalid_argument);
  CHECK_THROWS_AS(block_scale_dot(nv, element_format::e2m1, element_format::e2m1, a, a, std::vector<float>(3, 1.0f), s,
                                  0.0f),
                  std::invalid_argument);
  CHECK_THROWS_AS(block_scale_dot(nv, element_format::e2m1, element_format::e2m1, std::vector<float>(32, 1.0f),
                                  std::vector<float>(32, 1.0f), std::vector<float>(2, 1.0f),
                                  std::vector<float>(2, 1.0f), 0.0f),
                  std::invalid_argument);
  const block_scale_params mx = get_block_scale_preset(block_scale_kind::mxf8f6f4, scale_format::ue8m0, 32);
  std::vector<float> x(32, 1.0f), s3{3.0f}, s1{1.0f};
  CHECK_THROWS_AS(block_scale_dot(mx, element_format::e4m3, element_format::e4m3, x, x, s3, s1, 0.0f),
                  std::invalid_argument);
  std::vector<float> inf = x;
  inf[0] = INFINITY;
  CHECK_THROWS_AS(block_scale_dot(mx, element_format::e4m3, element_format::e4m3, inf, x, s1, s1, 0.0f),
                  std::invalid_argument);
  CHECK_NOTHROW(block_scale_dot(mx, element_format::e5m2, element_format::e4m3, inf, x, s1, s1, 0.0f));
  CHECK(evidence(mx, element_format::e5m2, element_format::e4m3) == block_scale_evidence::simulated);
  CHECK(evidence(mx, element_format::e2m1, element_format::e4m3) == block_scale_evidence::assumed);
}
