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

// fp32 value -> nearest-even fp16 value (finite inputs well inside the fp16 range).
float fp16_rne(float c) {
  if (c == 0.0f) return c;
  const double x = c;
  int e = std::ilogb(x);
  if (e < -14) e = -14;
  const double q = std::ldexp(1.0, e - 10);
  std::fesetround(FE_TONEAREST);
  return static_cast<float>(std::nearbyint(x / q) * q);
}

struct recorded_file {
  const char* gpu;
  const char* format;  // folder and file-name spelling
  const char* out;
  arch a;
  input_format in;
  output_format o;
  bool c_is_zero;          // the hardware run used c = 0 (H100 fp8 with wgmma)
  int expected_mismatches; // lines the preset does not reproduce (see presets.hpp)
};

const recorded_file kFiles[] = {
    {"A100", "bf16", "fp32", arch::sm_80, input_format::bf16, output_format::fp32, false, 0},
    {"A100", "fp16", "fp32", arch::sm_80, input_format::fp16, output_format::fp32, false, 0},
    {"A100", "fp16", "fp16", arch::sm_80, input_format::fp16, output_format::fp16, false, 0},
    {"L40S", "bf16", "fp32", arch::sm_89, input_format::bf16, output_format::fp32, false, 0},
    {"L40S", "fp16", "fp32", arch::sm_89, input_format::fp16, output_format::fp32, false, 0},
    {"L40S", "fp16", "fp16", arch::sm_89, input_format::fp16, output_format::fp16, false, 0},
    {"L40S", "E4M3", "fp32", arch::sm_89, input_format::e4m3, output_format::fp32, false, 0},
    {"L40S", "E5M2", "fp32", arch::sm_89, input_format::e5m2, output_format::fp32, false, 0},
    {"H100", "bf16", "fp32", arch::sm_90, input_format::bf16, output_format::fp32, false, 0},
    {"H100", "fp16", "fp32", arch::sm_90, input_format::fp16, output_format::fp32, false, 0},
    {"H100", "fp16", "fp16", arch::sm_90, input_format::fp16, output_format::fp16, false, 0},
    {"H100", "E4M3", "fp32", arch::sm_90, input_format::e4m3, output_format::fp32, true, 0},
    {"H100", "E5M2", "fp32", arch::sm_90, input_format::e5m2, output_format::fp32, true, 0},
    {"B200", "bf16", "fp32", arch::sm_100, input_format::bf16, output_format::fp32, false, 0},
    {"B200", "fp16", "fp32", arch::sm_100, input_format::fp16, output_format::fp32, false, 0},
    {"B200", "fp16", "fp16", arch::sm_100, input_format::fp16, output_format::fp16, false, 0},
    {"B200", "E4M3", "fp32", arch::sm_100, input_format::e4m3, output_format::fp32, false, 0},
    {"B200", "E5M2", "fp32", arch::sm_100, input_format::e5m2, output_format::fp32, false, 0},
};

std::string path_of(const recorded_file& f, char which, const char* fmt_in_name) {
  return std::string(KVQ_TENSOR_CORE_VECTORS) + "/" + f.gpu + "/" + f.format + "/" + which + "_" + f.gpu + "_" +
         fmt_in_name + ".txt.gz";
}

}  // namespace

TEST_CASE("every recorded tensor-core inner product reproduces bit for bit", "[mma][replay]") {
  for (const auto& f : kFiles) {
    const auto A = kvq_test::read_gz_lines(path_of(f, 'a', f.format));
    const auto B = kvq_test::read_gz_lines(path_of(f, 'b', f.format));
    const auto C = kvq_test::read_gz_lines(path_of(f, 'c', "fp32"));
    const auto D = kvq_test::read_gz_lines(path_of(f, 'd', f.out));
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
      if (f.o == output_format::fp16) c = fp16_rne(c);
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
