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
#include <kvq/mma/text.hpp>

#include <CLI/CLI.hpp>
#include <zlib.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
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

// The error of a line's parser, prefixed with the line's name.
template <class Where>
[[noreturn]] void rethrow_at(const Where& where, const std::invalid_argument& e) {
  throw bad_input(where() + ": " + e.what());
}

std::string hex_word(float d) {
  std::uint32_t u;
  std::memcpy(&u, &d, sizeof u);
  char buf[16];
  std::snprintf(buf, sizeof buf, "%08x", u);
  return buf;
}

// Line i of t through kvq/mma/text.hpp's parsers, errors named by where().
template <class Where>
void hex_words(const text_lines& t, std::size_t i, std::vector<float>& out, const Where& where) {
  try {
    kvq::mma::parse_hex_words(std::string_view(t.data(i), t.length(i)), out);
  } catch (const std::invalid_argument& e) {
    rethrow_at(where, e);
  }
}
template <class Where>
float binary_word(const text_lines& t, std::size_t i, const Where& where) {
  try {
    return kvq::mma::parse_binary_word(std::string_view(t.data(i), t.length(i)));
  } catch (const std::invalid_argument& e) {
    rethrow_at(where, e);
  }
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
    float d;
    kvq::mma::vector_case v;
    try {
      v = kvq::mma::parse_case(std::string_view(lines.data(i), lines.length(i)));
      if (v.mfma && c_mode != "aligned") throw bad_input(where + ": --c-mode applies to block-scaled cases only");
      if (c_mode == "separate") v.params.c_mode = kvq::mma::c_entry::separate;
      d = kvq::mma::evaluate(v);
    } catch (const std::invalid_argument& e) {
      throw bad_input(where + ": " + e.what());
    }
    ++n;
    if (check) {
      if (!v.has_d) throw bad_input(where + ": --check needs a d field");
      if (hex_word(d) != hex_word(v.d) && ++differ <= 3)
        first += " line " + std::to_string(i + 1) + ": got " + hex_word(d) + " want " + hex_word(v.d) + ";";
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
        nonzero_c = binary_word(C, i, line_name(c_path, i)) != 0.0f;
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
      hex_words(A, i, av, line_name(a_path, i));
      hex_words(B, i, bv, line_name(b_path, i));
      float c = C.size() == 0 ? 0.0f : binary_word(C, i, line_name(c_path, i));
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
