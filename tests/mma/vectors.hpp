// Reading the recorded tensor-core vectors (tests/data/tensor-core-vectors/): gzip text,
// a/b lines of 8-hex-digit fp32 words, c/d lines of one 32-character binary fp32 word
// (parsed by kvq/mma/text.hpp).
#pragma once

#include <kvq/mma/api.hpp>
#include <kvq/mma/text.hpp>

#include <zlib.h>

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvq_test {

inline std::vector<std::string> read_gz_lines(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("cannot open " + path);
  std::vector<std::string> lines;
  std::string cur;
  char buf[4096];
  while (gzgets(f, buf, sizeof buf) != nullptr) {
    cur += buf;
    if (!cur.empty() && cur.back() == '\n') {
      while (!cur.empty() && (cur.back() == '\n' || cur.back() == '\r')) cur.pop_back();
      lines.push_back(cur);
      cur.clear();
    }
  }
  if (!cur.empty()) lines.push_back(cur);
  gzclose(f);
  return lines;
}

inline float word_to_float(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

inline std::uint32_t float_to_word(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, sizeof u);
  return u;
}

// The library's parsers of these layouts (kvq/mma/text.hpp), strict: a malformed line
// of a record fails the test that reads it.
inline std::vector<float> parse_hex_words(const std::string& line) { return kvq::mma::parse_hex_words(line); }

inline std::uint32_t parse_binary_word(const std::string& line) {
  return float_to_word(kvq::mma::parse_binary_word(line));
}

// fp32 value -> nearest-even fp16 value (finite inputs well inside the fp16 range): the
// recording harness's conversion of c.
inline float fp16_rne(float c) {
  if (c == 0.0f) return c;
  const double x = c;
  int e = std::ilogb(x);
  if (e < -14) e = -14;
  const double q = std::ldexp(1.0, e - 10);
  std::fesetround(FE_TONEAREST);
  return static_cast<float>(std::nearbyint(x / q) * q);
}

// The recorded files (tests/data/tensor-core-vectors) and what each should reproduce.
struct recorded_file {
  const char* gpu;
  const char* format;  // folder and file-name spelling
  const char* out;
  kvq::mma::arch a;
  kvq::mma::input_format in;
  kvq::mma::output_format o;
  bool c_is_zero;          // the hardware run used c = 0 (H100 fp8 with wgmma)
  int expected_mismatches; // lines the preset does not reproduce (see presets.hpp)
};

inline const recorded_file recorded_files[] = {
    {"A100", "bf16", "fp32", kvq::mma::arch::sm_80, kvq::mma::input_format::bf16, kvq::mma::output_format::fp32, false, 0},
    {"A100", "fp16", "fp32", kvq::mma::arch::sm_80, kvq::mma::input_format::fp16, kvq::mma::output_format::fp32, false, 0},
    {"A100", "fp16", "fp16", kvq::mma::arch::sm_80, kvq::mma::input_format::fp16, kvq::mma::output_format::fp16, false, 0},
    {"L40S", "bf16", "fp32", kvq::mma::arch::sm_89, kvq::mma::input_format::bf16, kvq::mma::output_format::fp32, false, 0},
    {"L40S", "fp16", "fp32", kvq::mma::arch::sm_89, kvq::mma::input_format::fp16, kvq::mma::output_format::fp32, false, 0},
    {"L40S", "fp16", "fp16", kvq::mma::arch::sm_89, kvq::mma::input_format::fp16, kvq::mma::output_format::fp16, false, 0},
    {"L40S", "E4M3", "fp32", kvq::mma::arch::sm_89, kvq::mma::input_format::e4m3, kvq::mma::output_format::fp32, false, 0},
    {"L40S", "E5M2", "fp32", kvq::mma::arch::sm_89, kvq::mma::input_format::e5m2, kvq::mma::output_format::fp32, false, 0},
    {"H100", "bf16", "fp32", kvq::mma::arch::sm_90, kvq::mma::input_format::bf16, kvq::mma::output_format::fp32, false, 0},
    {"H100", "fp16", "fp32", kvq::mma::arch::sm_90, kvq::mma::input_format::fp16, kvq::mma::output_format::fp32, false, 0},
    {"H100", "fp16", "fp16", kvq::mma::arch::sm_90, kvq::mma::input_format::fp16, kvq::mma::output_format::fp16, false, 0},
    {"H100", "E4M3", "fp32", kvq::mma::arch::sm_90, kvq::mma::input_format::e4m3, kvq::mma::output_format::fp32, true, 0},
    {"H100", "E5M2", "fp32", kvq::mma::arch::sm_90, kvq::mma::input_format::e5m2, kvq::mma::output_format::fp32, true, 0},
    {"B200", "bf16", "fp32", kvq::mma::arch::sm_100, kvq::mma::input_format::bf16, kvq::mma::output_format::fp32, false, 0},
    {"B200", "fp16", "fp32", kvq::mma::arch::sm_100, kvq::mma::input_format::fp16, kvq::mma::output_format::fp32, false, 0},
    {"B200", "fp16", "fp16", kvq::mma::arch::sm_100, kvq::mma::input_format::fp16, kvq::mma::output_format::fp16, false, 0},
    {"B200", "E4M3", "fp32", kvq::mma::arch::sm_100, kvq::mma::input_format::e4m3, kvq::mma::output_format::fp32, false, 0},
    {"B200", "E5M2", "fp32", kvq::mma::arch::sm_100, kvq::mma::input_format::e5m2, kvq::mma::output_format::fp32, false, 0},
};

#ifdef KVQ_TENSOR_CORE_VECTORS
inline std::string recorded_path(const recorded_file& f, char which, const char* fmt_in_name) {
  return std::string(KVQ_TENSOR_CORE_VECTORS) + "/" + f.gpu + "/" + f.format + "/" + which + "_" + f.gpu + "_" +
         fmt_in_name + ".txt.gz";
}
#endif

}  // namespace kvq_test
