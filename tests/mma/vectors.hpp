// Reading the recorded tensor-core vectors (tests/data/tensor-core-vectors/): gzip text,
// a/b lines of 8-hex-digit fp32 words, c/d lines of one 32-character binary fp32 word
// (parsed by kvq/mma/text.hpp).
#pragma once

#include <kvq/mma/text.hpp>

#include <zlib.h>

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

}  // namespace kvq_test
