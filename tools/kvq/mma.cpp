// kvq mma: reads inner products in the layout of the recorded tensor-core vectors
// (a/b: one line per inner product of space-separated 8-hex-digit fp32 words; c: one
// 32-character binary fp32 word per line) and prints d = a·b + c as the preset of the
// chosen GPU computes it, one 32-character binary fp32 word per line (fp16 results as
// the fp32 word of the same value, as in the recorded d_*_fp16 files).
// With --cases it replays block-scaled inner products in the layout of tests/data/mma-sim/
// (one case a line: "KIND SCALE BLOCK AFMT BFMT | a | b | sa | sb | c [| d]", or for AMD
// MFMA "PRESET AFMT BFMT | a | b | c [| d]") through the block-scaled or MFMA presets and
// prints d as one 8-hex-digit fp32 word per line; --check compares
// with each line's d instead.
#include "mma.hpp"

#include <kvq/core/input_file.hpp>
#include <kvq/mma.hpp>
#include <kvq/mma/batch.hpp>

#include <CLI/CLI.hpp>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace kvq::cli {
namespace {

struct bad_input : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A whole file in one buffer, and its lines as (offset, length) spans without the line
// ends (a last line without '\n' counts when not empty): no allocation per line.
struct text_lines {
  std::string text;
  std::vector<std::pair<std::size_t, std::size_t>> spans;
  std::size_t size() const { return spans.size(); }
  const char* data(std::size_t i) const { return text.data() + spans[i].first; }
  std::size_t length(std::size_t i) const { return spans[i].second; }
  std::string str(std::size_t i) const { return text.substr(spans[i].first, spans[i].second); }
};

text_lines read_lines(const std::string& path, bool gz) {
  if (const std::string why = kvq::detail::not_regular_file(path); !why.empty()) throw bad_input(path + " " + why);
  text_lines t;
  char buf[1 << 16];
  if (gz) {
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f) throw bad_input("cannot open " + path);
    int got = 0;
    while ((got = gzread(f, buf, sizeof buf)) > 0) t.text.append(buf, static_cast<std::size_t>(got));
    int err = 0;
    gzerror(f, &err);
    gzclose(f);
    if (got < 0 || (err != Z_OK && err != Z_STREAM_END)) throw bad_input(path + ": not a readable gzip file");
  } else {
    std::FILE* f = std::fopen(path.c_str(), "rb");
    if (!f) throw bad_input("cannot open " + path);
    // gzip's magic bytes: the lines would be compressed binary, and their count wrong.
    const int m0 = std::fgetc(f), m1 = std::fgetc(f);
    if (m0 == 0x1F && m1 == 0x8B) {
      std::fclose(f);
      throw bad_input(path + " looks gzip-compressed; pass --gz");
    }
    if (std::fseek(f, 0, SEEK_END) == 0) {
      const long size = std::ftell(f);
      if (size > 0) t.text.reserve(static_cast<std::size_t>(size));
    }
    std::rewind(f);
    std::size_t got = 0;
    while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) t.text.append(buf, got);
    std::fclose(f);
  }
  std::size_t start = 0;
  const std::size_t n = t.text.size();
  while (start < n) {
    const void* nl = std::memchr(t.text.data() + start, '\n', n - start);
    const std::size_t end = nl != nullptr ? static_cast<std::size_t>(static_cast<const char*>(nl) - t.text.data()) : n;
    std::size_t len = end - start;
    while (len > 0 && (t.text[start + len - 1] == '\n' || t.text[start + len - 1] == '\r')) --len;
    t.spans.emplace_back(start, len);
    start = end + 1;
  }
  return t;
}

float float_of(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, sizeof x);
  return x;
}

// The value of a hexadecimal digit, -1 for any other character (a table lookup).
int hex_digit(char ch) {
  struct digit_table {
    signed char v[256];
    digit_table() {
      for (int i = 0; i < 256; ++i) v[i] = -1;
      for (int i = 0; i < 10; ++i) v['0' + i] = static_cast<signed char>(i);
      for (int i = 0; i < 6; ++i) {
        v['a' + i] = static_cast<signed char>(10 + i);
        v['A' + i] = static_cast<signed char>(10 + i);
      }
    }
  };
  static const digit_table t;
  return t.v[static_cast<unsigned char>(ch)];
}

// The 8-hex-digit words of line[0..n) appended to v; `where` names the line in errors
// (called only then).
template <class Where>
void parse_hex_line(const char* line, std::size_t n, std::vector<float>& v, const Where& where) {
  std::size_t i = 0;
  while (i < n) {
    while (i < n && (line[i] == ' ' || line[i] == '\t')) ++i;
    if (i >= n) break;
    std::size_t j = i;
    std::uint32_t u = 0;
    while (j < n && line[j] != ' ' && line[j] != '\t') {
      const int d = hex_digit(line[j]);
      if (d < 0)
        throw bad_input(where() + ": '" + std::string(line + i, j - i + 1) + "' is not an 8-hex-digit fp32 word");
      u = (u << 4) | static_cast<std::uint32_t>(d);
      ++j;
    }
    if (j - i != 8)
      throw bad_input(where() + ": '" + std::string(line + i, j - i) + "' is not an 8-hex-digit fp32 word");
    v.push_back(float_of(u));
    i = j;
  }
}

// The words of a whole field (the --cases files: few lines, an allocation each is fine).
std::vector<float> parse_hex_line(const std::string& field, const std::string& where) {
  std::vector<float> v;
  parse_hex_line(field.data(), field.size(), v, [&] { return where; });
  return v;
}

template <class Where>
float parse_binary_line(const char* line, std::size_t n, const Where& where) {
  std::uint32_t u = 0;
  int count = 0;
  bool binary = true;
  for (std::size_t i = 0; i < n; ++i) {
    const char ch = line[i];
    if (ch == ' ' || ch == '\t') continue;
    ++count;
    if (ch != '0' && ch != '1') binary = false;
    u = (u << 1) | static_cast<std::uint32_t>(ch == '1' ? 1 : 0);
  }
  if (count != 32) throw bad_input(where() + ": expected one 32-character binary fp32 word");
  if (!binary) {
    std::string s;
    for (std::size_t i = 0; i < n; ++i)
      if (line[i] != ' ' && line[i] != '\t') s += line[i];
    throw bad_input(where() + ": '" + s + "' is not a binary word");
  }
  return float_of(u);
}

std::vector<std::string> split_fields(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t i = 0;
  for (;;) {
    const std::size_t j = s.find(sep, i);
    out.push_back(s.substr(i, j == std::string::npos ? std::string::npos : j - i));
    if (j == std::string::npos) return out;
    i = j + 1;
  }
}

std::string hex_word(float d) {
  std::uint32_t u;
  std::memcpy(&u, &d, sizeof u);
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", u);
  return buf;
}

// kvq mma --cases FILE [--check]: block-scaled and AMD MFMA inner products (tests/data/mma-sim
// layout).
int run_cases(const std::string& path, bool gz, bool check, const std::string& c_mode) {
  const auto lines = read_lines(path, gz);
  std::string result;
  std::size_t differ = 0, n = 0;
  std::string first;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string where = path + " line " + std::to_string(i + 1);
    if (lines.length(i) == 0 || lines.data(i)[0] == '#') continue;
    const auto f = split_fields(lines.str(i), '|');
    std::vector<std::string> head;
    for (const auto& w : split_fields(f[0], ' '))
      if (!w.empty()) head.push_back(w);
    float d;
    std::vector<float> dv;
    if (head.size() == 3) {
      // AMD MFMA case: PRESET AFMT BFMT | a | b | c [| d]
      if (f.size() != 4 && f.size() != 5) throw bad_input(where + ": expected 'PRESET AFMT BFMT | a | b | c [| d]'");
      if (c_mode != "aligned") throw bad_input(where + ": --c-mode applies to block-scaled cases only");
      try {
        const kvq::mma::mfma_preset p = kvq::mma::parse_mfma_preset(head[0]);
        const auto c = parse_hex_line(f[3], where + " c");
        if (c.size() != 1) throw bad_input(where + ": expected one c word");
        if (f.size() == 5) {
          dv = parse_hex_line(f[4], where + " d");
          if (dv.size() != 1) throw bad_input(where + ": expected one d word");
        }
        d = kvq::mma::mfma_dot(p, kvq::mma::parse_mfma_input(head[1]), kvq::mma::parse_mfma_input(head[2]),
                               parse_hex_line(f[1], where + " a"), parse_hex_line(f[2], where + " b"), c[0]);
      } catch (const std::invalid_argument& e) {
        throw bad_input(where + ": " + e.what());
      }
    } else {
    if (f.size() != 6 && f.size() != 7)
      throw bad_input(where + ": expected 'KIND SCALE BLOCK AFMT BFMT | a | b | sa | sb | c [| d]' or "
                      "'PRESET AFMT BFMT | a | b | c [| d]'");
    if (head.size() != 5) throw bad_input(where + ": expected 'KIND SCALE BLOCK AFMT BFMT' before the first '|'");
    if (head[2] != "16" && head[2] != "32") throw bad_input(where + ": block '" + head[2] + "' is not 16 or 32");
    try {
      kvq::mma::block_scale_params p = kvq::mma::get_block_scale_preset(
          kvq::mma::parse_block_scale_kind(head[0]), kvq::mma::parse_scale_format(head[1]), std::stoi(head[2]));
      if (c_mode == "separate") p.c_mode = kvq::mma::c_entry::separate;
      const auto c = parse_hex_line(f[5], where + " c");
      if (c.size() != 1) throw bad_input(where + ": expected one c word");
      if (f.size() == 7) {
        dv = parse_hex_line(f[6], where + " d");
        if (dv.size() != 1) throw bad_input(where + ": expected one d word");
      }
      d = kvq::mma::block_scale_dot(p, kvq::mma::parse_element_format(head[3]),
                                    kvq::mma::parse_element_format(head[4]), parse_hex_line(f[1], where + " a"),
                                    parse_hex_line(f[2], where + " b"), parse_hex_line(f[3], where + " sa"),
                                    parse_hex_line(f[4], where + " sb"), c[0]);
    } catch (const std::invalid_argument& e) {
      throw bad_input(where + ": " + e.what());
    }
    }
    ++n;
    if (check) {
      if (dv.empty()) throw bad_input(where + ": --check needs a d field");
      if (hex_word(d) != hex_word(dv[0]) && ++differ <= 3)
        first += " line " + std::to_string(i + 1) + ": got " + hex_word(d) + " want " + hex_word(dv[0]) + ";";
    } else {
      result += hex_word(d);
      result += '\n';
    }
  }
  if (!check) {
    std::fwrite(result.data(), 1, result.size(), stdout);
    return 0;
  }
  if (differ != 0) {
    std::fprintf(stderr, "kvq mma: %zu of %zu cases differ:%s\n", differ, n, first.c_str());
    return 1;
  }
  std::printf("%zu of %zu cases reproduce\n", n, n);
  return 0;
}

}  // namespace

int cmd_mma(const std::vector<std::string>& args) {
  CLI::App app{
      "Tensor-core inner products d = a.b + c as the chosen GPU computes them (kvq::mma presets).\n"
      "Input layout of the recorded vectors: a/b one line per inner product of 8-hex-digit fp32\n"
      "words, c one 32-character binary fp32 word per line (rounded to fp16, nearest even, for\n"
      "--out-format fp16). Prints d as one 32-character binary fp32 word per line.\n"
      "--cases FILE replays block-scaled inner products (tcgen05.mma kind::mxf8f6f4 / mxf4nvf4,\n"
      "mma.sync block_scale) and AMD CDNA3 MFMA inner products (presets cdna3_fp8, cdna3_bf16,\n"
      "cdna3_bf16_k4, cdna3_fp16, cdna3_fp16_k4, cdna3_xf32, cdna3_fp32) in the layout of\n"
      "tests/data/mma-sim and prints d as 8-hex-digit words.",
      "kvq mma"};
  std::string arch_s, format_s, a_path, b_path, c_path, out_s = "fp32", cases_path, c_mode = "aligned";
  bool gz = false, check = false;
  app.add_option("--arch", arch_s, "GPU: sm_80, sm_89, sm_90, sm_100 (required without --cases)");
  app.add_option("--format", format_s, "input format: e4m3, e5m2, bf16, fp16 (required without --cases)");
  app.add_option("--a", a_path, "file of the a vectors (required without --cases)");
  app.add_option("--b", b_path, "file of the b vectors (required without --cases)");
  app.add_option("--cases", cases_path, "file of block-scaled or MFMA cases (tests/data/mma-sim layout)");
  app.add_flag("--check", check, "with --cases: compare with each case's d; exit 1 if any differs");
  app.add_option("--c-mode", c_mode, "with --cases: aligned (MMA-Sim, default) or separate (c added after the sum)")
      ->check(CLI::IsMember({"aligned", "separate"}));
  app.add_option("--c", c_path, "file of the c values (default: c = 0)");
  app.add_flag("--gz", gz, "the files are gzip-compressed");
  app.add_option("--out-format", out_s, "accumulator format: fp32 (default) or fp16");
  try {
    app.parse(std::vector<std::string>(args.rbegin(), args.rend()));
  } catch (const CLI::CallForHelp&) {
    std::fputs(app.help().c_str(), stdout);
    return 0;
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "kvq mma: %s (see kvq mma --help)\n", e.what());
    return 2;
  }
  try {
    if (!cases_path.empty()) {
      if (!arch_s.empty() || !format_s.empty() || !a_path.empty() || !b_path.empty() || !c_path.empty() ||
          out_s != "fp32")
        throw bad_input("--cases takes no --arch, --format, --a, --b, --c or --out-format");
      return run_cases(cases_path, gz, check, c_mode);
    }
    if (check || c_mode != "aligned") throw bad_input("--check and --c-mode need --cases");
    for (const auto& [opt, val] : {std::pair<const char*, const std::string*>{"--arch", &arch_s},
                                   {"--format", &format_s}, {"--a", &a_path}, {"--b", &b_path}})
      if (val->empty()) throw bad_input(std::string(opt) + " is required (or --cases; see kvq mma --help)");
    const kvq::mma::arch a = kvq::mma::parse_arch(arch_s);
    const kvq::mma::input_format in = kvq::mma::parse_input_format(format_s);
    const kvq::mma::output_format out = kvq::mma::parse_output_format(out_s);
    const kvq::mma::preset_info p = kvq::mma::get_preset(a, in, out);
    const text_lines A = read_lines(a_path, gz);
    const text_lines B = read_lines(b_path, gz);
    text_lines C;
    if (!c_path.empty()) C = read_lines(c_path, gz);
    if (B.size() != A.size())
      throw bad_input(b_path + " has " + std::to_string(B.size()) + " lines, " + a_path + " has " +
                      std::to_string(A.size()));
    if (!c_path.empty() && C.size() != A.size())
      throw bad_input(c_path + " has " + std::to_string(C.size()) + " lines, " + a_path + " has " +
                      std::to_string(A.size()));
    auto line_name = [](const std::string& path, std::size_t i) {
      return [&path, i] { return path + " line " + std::to_string(i + 1); };
    };
    // The recorded H100 fp8 run used c = 0 (wgmma); the preset's alignment of a nonzero c
    // is the paper's model, not a record (docs/mma.md). Say so rather than disagree silently
    // with the recorded d when the recorded c_ file is passed.
    bool nonzero_c = false;
    if (a == kvq::mma::arch::sm_90 && (in == kvq::mma::input_format::e4m3 || in == kvq::mma::input_format::e5m2))
      for (std::size_t i = 0; i < C.size() && !nonzero_c; ++i)
        nonzero_c = parse_binary_line(C.data(i), C.length(i), line_name(c_path, i)) != 0.0f;
    if (nonzero_c)
      std::fputs("kvq mma: note: sm_90 fp8 with c != 0 follows the model, not a hardware record (the recorded H100 "
                 "fp8 run used c = 0, so its c_ file is not the c of its d_ file: replay it without --c)\n",
                 stderr);
    // Parse and check every line (in line order, so the first bad line is the one named),
    // keeping the operands in two flat arrays; then evaluate them all with dot_fast, which
    // gives dot's bits (kvq/mma/fast.hpp).
    std::vector<float> av, bv, cv;
    std::vector<std::size_t> offset, length;
    offset.reserve(A.size());
    length.reserve(A.size());
    cv.reserve(A.size());
    for (std::size_t i = 0; i < A.size(); ++i) {
      const std::size_t a0 = av.size(), b0 = bv.size();
      parse_hex_line(A.data(i), A.length(i), av, line_name(a_path, i));
      parse_hex_line(B.data(i), B.length(i), bv, line_name(b_path, i));
      float c = C.size() == 0 ? 0.0f : parse_binary_line(C.data(i), C.length(i), line_name(c_path, i));
      c = kvq::mma::to_output(out, c);
      const std::size_t na = av.size() - a0, nb = bv.size() - b0;
      if (na != nb || !kvq::mma::detail::all_representable(av.data() + a0, na, in) ||
          !kvq::mma::detail::all_representable(bv.data() + b0, nb, in) || !kvq::mma::representable_fast(c, out)) {
        // The checked dot names what is wrong, in its own words.
        try {
          kvq::mma::dot(p, in, std::vector<float>(av.begin() + static_cast<std::ptrdiff_t>(a0), av.end()),
                        std::vector<float>(bv.begin() + static_cast<std::ptrdiff_t>(b0), bv.end()), c);
        } catch (const std::invalid_argument& e) {
          throw bad_input("line " + std::to_string(i + 1) + ": " + e.what());
        }
        throw bad_input("line " + std::to_string(i + 1) + ": not a value of the format");  // not reached
      }
      offset.push_back(a0);
      length.push_back(na);
      cv.push_back(c);
    }
    std::string result;
    result.resize(A.size() * 33);
    for (std::size_t i = 0; i < A.size(); ++i) {
      const float d =
          kvq::mma::dot_fast(p.params, in, av.data() + offset[i], bv.data() + offset[i], static_cast<int>(length[i]), cv[i]);
      std::uint32_t u;
      std::memcpy(&u, &d, sizeof u);
      char* w = &result[i * 33];
      for (int bit = 31; bit >= 0; --bit) *w++ = ((u >> bit) & 1u) ? '1' : '0';
      *w = '\n';
    }
    std::fwrite(result.data(), 1, result.size(), stdout);
    return 0;
  } catch (const bad_input& e) {
    std::fprintf(stderr, "kvq mma: %s\n", e.what());
    return 2;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "kvq mma: %s\n", e.what());
    return 2;
  }
}

}  // namespace kvq::cli
