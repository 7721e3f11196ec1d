/// \file
/// kvq/mma/text.hpp — the text layouts of inner-product vectors, read by `kvq mma` and the
/// tests that replay them. Host only.
///
///  - Recorded tensor-core vectors (tests/data/tensor-core-vectors): a and b files hold one
///    inner product per line as 8-hex-digit fp32 words separated by spaces; c and d files
///    one 32-character binary fp32 word per line (parse_hex_words, parse_binary_word).
///  - Block-scaled and MFMA cases (tests/data/mma-sim): one case a line,
///    "KIND SCALE BLOCK AFMT BFMT | a | b | sa | sb | c [| d]" for block-scaled MMA
///    (tcgen05.mma kind::mxf8f6f4 / mxf4nvf4, mma.sync block_scale) or
///    "PRESET AFMT BFMT | a | b | c [| d]" for AMD MFMA, the fields 8-hex-digit words
///    (parse_case, then evaluate).
///
/// These are parsers of outside files: a malformed line is a std::invalid_argument naming
/// the field and the offending text, and nothing else escapes (tests/fuzz/fuzz_mma_text.cpp
/// runs them on mutated lines under the sanitizers in every build).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <kvq/mma/api.hpp>

namespace kvq::mma {

namespace detail {

// The value of a hexadecimal digit, -1 for any other character.
inline int hex_digit(char ch) noexcept {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
  return -1;
}

inline float float_of_bits(std::uint32_t u) noexcept {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

inline bool is_blank(char ch) noexcept { return ch == ' ' || ch == '\t'; }

// The fields of s between separators (an empty s is one empty field).
inline std::vector<std::string_view> split_fields(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    const std::size_t j = s.find(sep);
    out.push_back(s.substr(0, j));
    if (j == std::string_view::npos) return out;
    s.remove_prefix(j + 1);
  }
}

// The blank-separated words of s.
inline std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  std::size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && is_blank(s[i])) ++i;
    std::size_t j = i;
    while (j < s.size() && !is_blank(s[j])) ++j;
    if (j > i) out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace detail

/// Appends the fp32 words of `line` (8 hexadecimal digits each, separated by spaces or
/// tabs; none is an empty line) to out, without allocating beyond out's growth.
/// \throws std::invalid_argument naming the first token that is not such a word (out then
///         holds the words before it).
inline void parse_hex_words(std::string_view line, std::vector<float>& out) {
  std::size_t i = 0;
  const std::size_t n = line.size();
  while (i < n) {
    while (i < n && detail::is_blank(line[i])) ++i;
    if (i >= n) break;
    std::size_t j = i;
    std::uint32_t u = 0;
    while (j < n && !detail::is_blank(line[j])) {
      const int d = detail::hex_digit(line[j]);
      if (d < 0)
        throw std::invalid_argument("'" + std::string(line.substr(i, j - i + 1)) +
                                    "' is not an 8-hex-digit fp32 word");
      u = (u << 4) | static_cast<std::uint32_t>(d);
      ++j;
    }
    if (j - i != 8)
      throw std::invalid_argument("'" + std::string(line.substr(i, j - i)) + "' is not an 8-hex-digit fp32 word");
    out.push_back(detail::float_of_bits(u));
    i = j;
  }
}

/// The fp32 words of `line` (see the appending overload).
inline std::vector<float> parse_hex_words(std::string_view line) {
  std::vector<float> v;
  parse_hex_words(line, v);
  return v;
}

/// The fp32 word of a line of 32 binary digits, most significant first (spaces and tabs
/// ignored).
/// \throws std::invalid_argument when the line has not exactly 32 such characters or one
///         of them is not 0 or 1.
inline float parse_binary_word(std::string_view line) {
  std::uint32_t u = 0;
  int count = 0;
  bool binary = true;
  for (const char ch : line) {
    if (detail::is_blank(ch)) continue;
    ++count;
    if (ch != '0' && ch != '1') binary = false;
    u = (u << 1) | static_cast<std::uint32_t>(ch == '1' ? 1 : 0);
  }
  if (count != 32) throw std::invalid_argument("expected one 32-character binary fp32 word");
  if (!binary) {
    std::string s;
    for (const char ch : line)
      if (!detail::is_blank(ch)) s += ch;
    throw std::invalid_argument("'" + s + "' is not a binary word");
  }
  return detail::float_of_bits(u);
}

/// One block-scaled or MFMA case line, parsed (values not yet checked against their
/// formats: evaluate() does that).
struct vector_case {
  /// True: an AMD MFMA case ("PRESET AFMT BFMT | a | b | c [| d]"); false: block-scaled.
  bool mfma = false;
  /// Block-scaled: the preset of (KIND, SCALE, BLOCK); its c_mode may be changed before
  /// evaluate().
  block_scale_params params{};
  /// Block-scaled: the element format of a.
  element_format a_format = element_format::e4m3;
  /// Block-scaled: the element format of b.
  element_format b_format = element_format::e4m3;
  /// MFMA: the preset.
  mfma_preset preset = mfma_preset::cdna3_fp8;
  /// MFMA: the operand format of a.
  mfma_input a_input = mfma_input::fp32;
  /// MFMA: the operand format of b.
  mfma_input b_input = mfma_input::fp32;
  /// The a operand.
  std::vector<float> a;
  /// The b operand.
  std::vector<float> b;
  /// Block-scaled: the scales of a, one per block.
  std::vector<float> sa;
  /// Block-scaled: the scales of b, one per block.
  std::vector<float> sb;
  /// The accumulator input.
  float c = 0.0f;
  /// Whether the line gives the expected d.
  bool has_d = false;
  /// The expected d (when has_d).
  float d = 0.0f;
};

/// Parses one case line (a line that is neither empty nor a '#' comment).
/// \throws std::invalid_argument naming the field that is wrong: the layout, an unknown
///         kind, scale format, block size, element format or MFMA preset, a word that is not
///         8 hexadecimal digits, or a c or d field without exactly one word.
inline vector_case parse_case(std::string_view line) {
  const std::vector<std::string_view> f = detail::split_fields(line, '|');
  const std::vector<std::string_view> head = detail::words(f[0]);
  vector_case v;
  auto field = [&](std::size_t i, const char* what, std::vector<float>& out) {
    try {
      parse_hex_words(f[i], out);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string(what) + ": " + e.what());
    }
  };
  auto one = [&](std::size_t i, const char* what) {
    std::vector<float> w;
    field(i, what, w);
    if (w.size() != 1) throw std::invalid_argument(std::string("expected one ") + what + " word");
    return w[0];
  };
  const auto str = [](std::string_view s) { return std::string(s); };
  // Both layouts end "c [| d]" at field i.
  const auto c_and_d = [&](std::size_t i) {
    v.c = one(i, "c");
    if (f.size() == i + 2) {
      v.d = one(i + 1, "d");
      v.has_d = true;
    }
    return v;
  };
  if (head.size() == 3) {
    if (f.size() != 4 && f.size() != 5) throw std::invalid_argument("expected 'PRESET AFMT BFMT | a | b | c [| d]'");
    v.mfma = true;
    v.preset = parse_mfma_preset(str(head[0]));
    v.a_input = parse_mfma_input(str(head[1]));
    v.b_input = parse_mfma_input(str(head[2]));
    field(1, "a", v.a);
    field(2, "b", v.b);
    return c_and_d(3);
  }
  if (f.size() != 6 && f.size() != 7)
    throw std::invalid_argument(
        "expected 'KIND SCALE BLOCK AFMT BFMT | a | b | sa | sb | c [| d]' or 'PRESET AFMT BFMT | a | b | c [| d]'");
  if (head.size() != 5) throw std::invalid_argument("expected 'KIND SCALE BLOCK AFMT BFMT' before the first '|'");
  if (head[2] != "16" && head[2] != "32") throw std::invalid_argument("block '" + str(head[2]) + "' is not 16 or 32");
  v.params = get_block_scale_preset(parse_block_scale_kind(str(head[0])), parse_scale_format(str(head[1])),
                                    head[2] == "16" ? 16 : 32);
  v.a_format = parse_element_format(str(head[3]));
  v.b_format = parse_element_format(str(head[4]));
  field(1, "a", v.a);
  field(2, "b", v.b);
  field(3, "sa", v.sa);
  field(4, "sb", v.sb);
  return c_and_d(5);
}

/// d = a·b + c of a parsed case through its preset (block_scale_dot or mfma_dot).
/// \throws std::invalid_argument as those do (sizes that do not fit the preset, a value
///         that is not one of its format, formats the preset does not take).
inline float evaluate(const vector_case& v) {
  if (v.mfma) return mfma_dot(v.preset, v.a_input, v.b_input, v.a, v.b, v.c);
  return block_scale_dot(v.params, v.a_format, v.b_format, v.a, v.b, v.sa, v.sb, v.c);
}

}  // namespace kvq::mma
