// Reading the recorded tensor-core vectors (tests/data/tensor-core-vectors/): gzip text,
// a/b lines of 8-hex-digit fp32 words, c/d lines of one 32-character binary fp32 word.
#pragma once

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

inline std::vector<float> parse_hex_words(const std::string& line) {
  std::vector<float> v;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    if (i >= line.size()) break;
    std::size_t j = i;
    while (j < line.size() && line[j] != ' ') ++j;
    v.push_back(word_to_float(static_cast<std::uint32_t>(std::stoul(line.substr(i, j - i), nullptr, 16))));
    i = j;
  }
  return v;
}

inline std::uint32_t parse_binary_word(const std::string& line) {
  std::uint32_t u = 0;
  for (char ch : line) {
    if (ch == '0' || ch == '1') u = (u << 1) | static_cast<std::uint32_t>(ch - '0');
  }
  return u;
}

}  // namespace kvq_test
