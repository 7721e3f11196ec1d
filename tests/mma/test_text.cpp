// The text layouts of inner-product vectors (kvq/mma/text.hpp): words written out by hand
// (IEEE bit patterns), the layouts of the recorded and MMA-Sim files, and every kind of
// malformed line, each a std::invalid_argument that names the field and the text.
#include <kvq/mma/text.hpp>

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace kvq::mma;

std::uint32_t word_bits(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

}  // namespace

TEST_CASE("hex words: values, separators, and bad tokens", "[mma][text]") {
  const std::vector<float> v = parse_hex_words("3f800000 80000000\t7f800000  c0490fdb 00000001");
  REQUIRE(v.size() == 5);
  CHECK(v[0] == 1.0f);
  CHECK(word_bits(v[1]) == 0x80000000u);  // -0
  CHECK(v[2] == std::numeric_limits<float>::infinity());
  CHECK(word_bits(v[3]) == 0xc0490fdbu);  // -pi in fp32
  CHECK(v[4] == std::numeric_limits<float>::denorm_min());
  CHECK(std::isnan(parse_hex_words("7fc00000")[0]));
  CHECK(parse_hex_words("3F800000")[0] == 1.0f);  // either case
  CHECK(parse_hex_words("").empty());
  CHECK(parse_hex_words("   \t ").empty());
  CHECK_THROWS_WITH(parse_hex_words("3f80000"), "'3f80000' is not an 8-hex-digit fp32 word");
  CHECK_THROWS_WITH(parse_hex_words("3f8000000"), "'3f8000000' is not an 8-hex-digit fp32 word");
  CHECK_THROWS_WITH(parse_hex_words("3f800000 3g800000"), "'3g' is not an 8-hex-digit fp32 word");
  CHECK_THROWS_WITH(parse_hex_words("0x3f8000"), "'0x' is not an 8-hex-digit fp32 word");
  // The appending form keeps the words before the bad one.
  std::vector<float> out{2.0f};
  CHECK_THROWS_AS(parse_hex_words("3f800000 zz", out), std::invalid_argument);
  CHECK(out == std::vector<float>{2.0f, 1.0f});
}

TEST_CASE("binary words: 32 digits, blanks ignored", "[mma][text]") {
  CHECK(parse_binary_word("00111111100000000000000000000000") == 1.0f);
  CHECK(word_bits(parse_binary_word("1000 0000 0000 0000 0000 0000 0000 0000")) == 0x80000000u);
  CHECK(word_bits(parse_binary_word("11111111111111111111111111111111")) == 0xffffffffu);
  CHECK_THROWS_WITH(parse_binary_word("0011111110000000000000000000000"),
                    "expected one 32-character binary fp32 word");
  CHECK_THROWS_WITH(parse_binary_word(""), "expected one 32-character binary fp32 word");
  CHECK_THROWS_WITH(parse_binary_word("00111111100000000000000000000002"),
                    "'00111111100000000000000000000002' is not a binary word");
}

TEST_CASE("case lines: block-scaled and MFMA layouts", "[mma][text]") {
  // 32 e4m3 ones against 32 ones with unit ue8m0 scales and c = 0.5: d = 32.5.
  std::string a, b;
  for (int i = 0; i < 32; ++i) {
    a += " 3f800000";
    b += " 3f800000";
  }
  const vector_case v = parse_case("mxf8f6f4 ue8m0 32 e4m3 e4m3 |" + a + " |" + b + " | 3f800000 | 3f800000 | 3f000000 | 42020000");
  CHECK(!v.mfma);
  CHECK(v.params.block == 32);
  CHECK(v.params.scale == scale_format::ue8m0);
  CHECK(v.a_format == element_format::e4m3);
  CHECK(v.a.size() == 32);
  CHECK(v.sa == std::vector<float>{1.0f});
  CHECK(v.c == 0.5f);
  REQUIRE(v.has_d);
  CHECK(v.d == 32.5f);
  CHECK(evaluate(v) == 32.5f);
  const vector_case w = parse_case("  cdna3_bf16   bf16 bf16 | 3f800000 40000000 | 40400000 3f800000 | 00000000");
  CHECK(w.mfma);
  CHECK(w.preset == mfma_preset::cdna3_bf16);
  CHECK(w.a_input == mfma_input::bf16);
  CHECK(!w.has_d);
  CHECK(evaluate(w) == 5.0f);  // 1*3 + 2*1, exact
}

TEST_CASE("case lines: every malformed field is named", "[mma][text]") {
  const std::string ones = " 3f800000 | 3f800000 | 00000000";
  CHECK_THROWS_WITH(parse_case("cdna3_fp64 fp32 fp32 |" + ones), Catch::Contains("unknown MFMA preset 'cdna3_fp64'"));
  CHECK_THROWS_WITH(parse_case("cdna3_fp32 fp64 fp32 |" + ones), Catch::Contains("unknown MFMA operand format 'fp64'"));
  CHECK_THROWS_WITH(parse_case("cdna3_fp32 fp32 fp32 | 3f800000 | 3f800000"),
                    "expected 'PRESET AFMT BFMT | a | b | c [| d]'");
  CHECK_THROWS_WITH(parse_case("cdna3_fp32 fp32 fp32 | 3f80000x | 3f800000 | 00000000"),
                    "a: '3f80000x' is not an 8-hex-digit fp32 word");
  CHECK_THROWS_WITH(parse_case("cdna3_fp32 fp32 fp32 | 3f800000 | 3f800000 | 00000000 3f800000"),
                    "expected one c word");
  CHECK_THROWS_WITH(parse_case("cdna3_fp32 fp32 fp32 | 3f800000 | 3f800000 | 00000000 |"), "expected one d word");
  CHECK_THROWS_WITH(parse_case(""), Catch::Contains("expected 'KIND SCALE BLOCK AFMT BFMT | a | b | sa | sb | c [| d]'"));
  CHECK_THROWS_WITH(parse_case("mxf8f6f4 ue8m0 32 e4m3 | a | b | sa | sb | c"),
                    "expected 'KIND SCALE BLOCK AFMT BFMT' before the first '|'");
  CHECK_THROWS_WITH(parse_case("mxf8f6f4 ue8m0 64 e4m3 e4m3 | | | | | 00000000"), "block '64' is not 16 or 32");
  CHECK_THROWS_WITH(parse_case("mxf8f6f4 ue8m0 +32 e4m3 e4m3 | | | | | 00000000"), "block '+32' is not 16 or 32");
  CHECK_THROWS_WITH(parse_case("mxf9 ue8m0 32 e4m3 e4m3 | | | | | 00000000"), Catch::Contains("unknown block-scaled kind 'mxf9'"));
  CHECK_THROWS_WITH(parse_case("mxf4nvf4 ue4m3 32 e2m1 e2m1 | | | | | 00000000"),
                    Catch::Contains("no block-scaled preset for mxf4nvf4 with ue4m3 scales per 32"));
  CHECK_THROWS_WITH(parse_case("mxf8f6f4 ue8m0 32 e4m3 e9m9 | | | | | 00000000"), Catch::Contains("unknown element format 'e9m9'"));
  CHECK_THROWS_WITH(parse_case("mxf8f6f4 ue8m0 32 e4m3 e4m3 | | | | 1 | 00000000"), "sb: '1' is not an 8-hex-digit fp32 word");
  // Parsed but not evaluable: sizes and values are evaluate()'s to check.
  const vector_case v = parse_case("mxf8f6f4 ue8m0 32 e4m3 e4m3 | 3f800000 | 3f800000 | 3f800000 | 3f800000 | 00000000");
  CHECK_THROWS_WITH(evaluate(v), Catch::Contains("K = 1 is not a positive multiple of 32"));
  const vector_case m = parse_case("cdna3_fp8 e4m3fnuz e4m3fnuz | 43800000 | 3f800000 | 00000000");
  CHECK_THROWS_WITH(evaluate(m), Catch::Contains("a[0] is not a e4m3fnuz value"));
}
