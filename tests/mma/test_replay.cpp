// Replays every recorded hardware inner product (tests/data/tensor-core-vectors/) through
// the preset of its GPU and formats and requires the bit-identical d.
//
// The oracle is the hardware itself (records by Khattak & Mikaitis, arXiv 2512.07004).
// For fp16 output the recording harness converted the fp32 c to fp16 with
// round-to-nearest-even before the mma; the test does that conversion with its own
// double-precision arithmetic, independent of the model.
#include "vectors.hpp"

#include <kvq/mma.hpp>

#include <catch2/catch.hpp>

#include <cfenv>
#include <cmath>
#include <cstdio>
#include <string>

namespace {

using namespace kvq::mma;

}  // namespace

TEST_CASE("every recorded tensor-core inner product reproduces bit for bit", "[mma][replay]") {
  for (const auto& f : kvq_test::recorded_files) {
    const auto A = kvq_test::read_gz_lines(kvq_test::recorded_path(f, 'a', f.format));
    const auto B = kvq_test::read_gz_lines(kvq_test::recorded_path(f, 'b', f.format));
    const auto C = kvq_test::read_gz_lines(kvq_test::recorded_path(f, 'c', "fp32"));
    const auto D = kvq_test::read_gz_lines(kvq_test::recorded_path(f, 'd', f.out));
    REQUIRE(A.size() == 5000);
    REQUIRE(B.size() == A.size());
    REQUIRE(C.size() == A.size());
    REQUIRE(D.size() == A.size());
    const preset_info p = get_preset(f.a, f.in, f.o);
    int mismatches = 0;
    std::string first;
    for (std::size_t i = 0; i < A.size(); ++i) {
      const auto a = kvq_test::parse_hex_words(A[i]);
      const auto b = kvq_test::parse_hex_words(B[i]);
      float c = f.c_is_zero ? 0.0f : kvq_test::word_to_float(kvq_test::parse_binary_word(C[i]));
      if (f.o == output_format::fp16) c = kvq_test::fp16_rne(c);
      const std::uint32_t want = kvq_test::parse_binary_word(D[i]);
      const std::uint32_t got = kvq_test::float_to_word(dot(p, f.in, a, b, c));
      if (got != want) {
        if (++mismatches <= 3) {
          char buf[128];
          std::snprintf(buf, sizeof buf, " line %zu: got %08x want %08x;", i + 1, got, want);
          first += buf;
        }
      }
    }
    INFO(f.gpu << " " << f.format << " -> " << f.out << ": " << mismatches << " of " << A.size()
                << " lines differ" << first);
    CHECK(mismatches == f.expected_mismatches);
  }
}
