// kvq/verify/npy_verify.hpp — the command-line verifier for kernel authors who work
// from Python: read a .npy input and the kernel's dumped codes (and scales), quantize
// the input with a named kvq scheme, compare bit for bit and print a mismatch report.
//
//   kvq-npy-verify --scheme NAME --input X.npy --codes C.npy [options]
//   kvq-npy-verify --make-example DIR [--scheme NAME] [--rows R] [--cols C] [--seed S]
//   kvq-npy-verify --list-schemes | --help
//
// Exit status: 0 all elements match, 1 some differ (the report says which),
// 2 bad usage or bad input (one line on stderr naming the problem).
//
// Files:
//   input   '<f4' float32, '<f2' float16 or '<u2' bfloat16 bits; C order, any shape.
//           16-bit inputs are widened to float exactly, then quantized.
//   codes   '|u1': one code per element, right-aligned (same element count as the
//           input), or for 4-bit formats two per byte, element 2i in the low nibble
//           (the cvt...e2m1x2 packing; (n + 1) / 2 bytes). The layout is recognised from
//           the element count.
//
// Element schemes (one code per value, no scale): e4m3, e5m2, e3m2, e2m3, e2m1,
// e4m3fnuz, e5m2fnuz, ue4m3, ue8m0 — kvq::encode with --rounding (rn, rz, ru, rd, rna;
// default rn) and --overflow (satfinite, nosat; default satfinite).
//
// The program is npy_verify_main(); tools/npy_verify.cpp wraps it, and the kvq
// command can call it as its `verify` subcommand.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvq/format/bits.hpp>
#include <kvq/format/bulk.hpp>
#include <kvq/format/formats.hpp>
#include <kvq/format/policy.hpp>
#include <kvq/verify/compare.hpp>
#include <kvq/verify/generators.hpp>
#include <kvq/verify/npy.hpp>

namespace kvq::verify {

struct npy_verify_request {
  std::string scheme = "e4m3";
  std::string input, codes;  // .npy paths
  rounding r = rounding::nearest_even;
  overflow o = overflow::satfinite;
  std::size_t max_listed = 10;
};

struct npy_verify_result {
  std::string scheme;
  std::vector<std::size_t> shape;  // of the input
  report codes;
  bool ok() const { return codes.ok(); }
};

namespace detail {

template <class F>
std::vector<std::uint8_t> encode_all(const std::vector<float>& x, rounding r, overflow o) {
  std::vector<std::uint8_t> c(x.size());
  kvq::encode_n<F>(x.data(), x.size(), c.data(), r, o);
  return c;
}

// Packs codes `bits` wide, element 2i in the low nibble (bits = 4).
inline std::vector<std::uint8_t> pack4(const std::vector<std::uint8_t>& c) {
  std::vector<std::uint8_t> p((c.size() + 1) / 2, 0);
  for (std::size_t i = 0; i < c.size(); ++i)
    p[i / 2] = static_cast<std::uint8_t>(p[i / 2] | ((c[i] & 0x0F) << (4 * (i % 2))));
  return p;
}

// One entry per element scheme.
struct element_scheme {
  const char* name;
  const char* what;
  int bits;
  std::function<npy_verify_result(const npy_verify_request&, const std::vector<float>&, const npy::array&,
                                  const std::vector<std::size_t>&)>
      verify;
  std::function<std::vector<std::uint8_t>(const std::vector<float>&, rounding, overflow)> encode;
  std::function<std::vector<float>()> edge_cases;
};

template <class F>
element_scheme make_element_scheme(const char* what) {
  using T = format_of_t<F>;
  element_scheme s;
  s.name = format_name<T>();
  s.what = what;
  s.bits = T::bits;
  s.encode = [](const std::vector<float>& x, rounding r, overflow o) { return encode_all<T>(x, r, o); };
  s.edge_cases = [] { return edge_case_values<T>(); };
  s.verify = [](const npy_verify_request& req, const std::vector<float>& x, const npy::array& codes,
                const std::vector<std::size_t>& shape) {
    const std::size_t n = x.size();
    const std::vector<std::uint8_t> got = codes.as_u8();
    const std::vector<std::uint8_t> want = encode_all<T>(x, req.r, req.o);
    npy_verify_result res;
    res.scheme = format_name<T>();
    res.shape = shape;
    if (got.size() == n) {
      res.codes = compare(want.data(), got.data(), n, std::string("codes (") + format_name<T>() + ")",
                          code_decoder<T>{}, x.data(), req.max_listed);
      res.codes.element_bits = T::bits;
    } else if (T::bits == 4 && got.size() == (n + 1) / 2) {
      const std::vector<std::uint8_t> wp = pack4(want);
      res.codes = compare_packed_codes<T>(wp.data(), got.data(), n, 4, x.data(), req.max_listed);
    } else {
      throw std::invalid_argument("codes file '" + req.codes + "' holds " + std::to_string(got.size()) +
                                  " bytes; the input has " + std::to_string(n) + " elements (expected " +
                                  std::to_string(n) +
                                  (T::bits == 4 ? " codes, or " + std::to_string((n + 1) / 2) + " packed bytes"
                                                : std::string(" codes")) +
                                  ")");
    }
    return res;
  };
  return s;
}

inline const std::vector<element_scheme>& element_schemes() {
  static const std::vector<element_scheme> v = {
      make_element_scheme<fmt::e4m3>("FP8 E4M3 (OCP fn): max 448, NaN S.1111.111"),
      make_element_scheme<fmt::e5m2>("FP8 E5M2: IEEE Inf/NaN, max 57344"),
      make_element_scheme<fmt::e3m2>("FP6 E3M2: max 28, no Inf/NaN"),
      make_element_scheme<fmt::e2m3>("FP6 E2M3: max 7.5, no Inf/NaN"),
      make_element_scheme<fmt::e2m1>("FP4 E2M1: max 6, no Inf/NaN (codes unpacked or packed two per byte)"),
      make_element_scheme<fmt::e4m3fnuz>("FP8 E4M3 fnuz: max 240, 0x80 NaN"),
      make_element_scheme<fmt::e5m2fnuz>("FP8 E5M2 fnuz: max 57344, 0x80 NaN"),
      make_element_scheme<fmt::ue4m3>("unsigned E4M3 (NVFP4 scale): max 448"),
      make_element_scheme<fmt::ue8m0>("UE8M0 (MX scale): powers of two 2^-127..2^127, 0xFF NaN"),
  };
  return v;
}

inline const element_scheme* find_element_scheme(const std::string& name) {
  for (const auto& s : element_schemes())
    if (name == s.name) return &s;
  return nullptr;
}

inline std::string scheme_names() {
  std::string s;
  for (const auto& e : element_schemes()) s += (s.empty() ? "" : ", ") + std::string(e.name);
  return s;
}

inline rounding parse_rounding(const std::string& v) {
  if (v == "rn" || v == "nearest_even") return rounding::nearest_even;
  if (v == "rz" || v == "toward_zero") return rounding::toward_zero;
  if (v == "ru" || v == "up") return rounding::up;
  if (v == "rd" || v == "down") return rounding::down;
  if (v == "rna" || v == "nearest_away") return rounding::nearest_away;
  throw std::invalid_argument("unknown --rounding '" + v + "' (rn, rz, ru, rd, rna)");
}

inline overflow parse_overflow(const std::string& v) {
  if (v == "satfinite" || v == "sat") return overflow::satfinite;
  if (v == "nosat") return overflow::nosat;
  throw std::invalid_argument("unknown --overflow '" + v + "' (satfinite, nosat)");
}

inline std::size_t parse_count(const std::string& opt, const std::string& v, std::size_t lo, std::size_t hi) {
  std::size_t pos = 0;
  unsigned long long x = 0;
  try {
    x = std::stoull(v, &pos, 10);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos != v.size() || v.empty() || v[0] == '-' || x < lo || x > hi)
    throw std::invalid_argument(opt + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                "], got '" + v + "'");
  return static_cast<std::size_t>(x);
}

}  // namespace detail

// Quantizes the input file with the scheme and compares with the codes file.
// Throws std::invalid_argument (bad scheme, files, shapes) or std::runtime_error (I/O).
inline npy_verify_result npy_verify(const npy_verify_request& req) {
  const detail::element_scheme* s = detail::find_element_scheme(req.scheme);
  if (!s) throw std::invalid_argument("unknown scheme '" + req.scheme + "' (known: " + detail::scheme_names() + ")");
  const npy::array in = npy::read(req.input);
  if (in.type == npy::dtype::u8)
    throw std::invalid_argument("input file '" + req.input + "' is uint8; the input must be float32, float16 or "
                                "bfloat16 bits (uint16)");
  const npy::array codes = npy::read(req.codes);
  if (codes.type != npy::dtype::u8)
    throw std::invalid_argument("codes file '" + req.codes + "' is " + npy::name(codes.type) + "; codes must be uint8");
  return s->verify(req, in.to_float(), codes, in.shape);
}

// Writes DIR/input.npy (float32, rows x cols: the scheme's edge cases, then
// counter-based random values spanning its range) and DIR/codes.npy (kvq's codes, packed
// two per byte for 4-bit formats). Returns the paths written.
inline std::vector<std::string> npy_make_example(const std::string& dir, const std::string& scheme,
                                                 std::size_t rows = 8, std::size_t cols = 64,
                                                 std::uint64_t seed = 1) {
  const detail::element_scheme* s = detail::find_element_scheme(scheme);
  if (!s) throw std::invalid_argument("unknown scheme '" + scheme + "' (known: " + detail::scheme_names() + ")");
  if (rows == 0 || cols == 0) throw std::invalid_argument("--rows and --cols must be positive");
  if (s->bits == 4 && cols % 2 != 0) throw std::invalid_argument("--cols must be even for a packed 4-bit format");
  const std::size_t n = rows * cols;
  std::vector<float> x = s->edge_cases();
  if (x.size() > n / 2) x.resize(n / 2);
  // The rest: random sign, exponent over the float range around the format's, mantissa.
  for (std::uint64_t i = 0; x.size() < n; ++i) {
    const std::uint64_t r = detail::draw(seed, i);
    const std::uint32_t exp = 127u - 20u + static_cast<std::uint32_t>((r >> 24) % 40u);  // 2^-20 .. 2^19
    const std::uint32_t bits = (static_cast<std::uint32_t>(r >> 63) << 31) | (exp << 23) |
                               static_cast<std::uint32_t>(r & 0x7FFFFFu);
    x.push_back(kvq::bit_cast<float>(bits));
  }
  std::filesystem::create_directories(dir);
  const std::string in_path = (std::filesystem::path(dir) / "input.npy").string();
  const std::string codes_path = (std::filesystem::path(dir) / "codes.npy").string();
  npy::write(in_path, npy::from_floats({rows, cols}, x));
  const std::vector<std::uint8_t> c = s->encode(x, rounding::nearest_even, overflow::satfinite);
  if (s->bits == 4)
    npy::write(codes_path, npy::from_u8({rows, cols / 2}, detail::pack4(c)));
  else
    npy::write(codes_path, npy::from_u8({rows, cols}, c));
  return {in_path, codes_path};
}

inline void npy_verify_usage(std::ostream& os) {
  os << "usage: kvq-npy-verify --scheme NAME --input X.npy --codes C.npy\n"
        "                      [--rounding rn|rz|ru|rd|rna] [--overflow satfinite|nosat] [--max-report N]\n"
        "       kvq-npy-verify --make-example DIR [--scheme NAME] [--rows R] [--cols C] [--seed S]\n"
        "       kvq-npy-verify --list-schemes | --help\n"
        "Quantizes X with kvq's scheme NAME and compares the result with the codes in C bit for bit.\n"
        "Exit status: 0 match, 1 mismatch, 2 bad usage or input.\n";
}

// The program. argv[0] is the program name. Returns the exit status.
inline int npy_verify_main(int argc, char** argv, std::ostream& out, std::ostream& err) {
  // The program name for messages: the last path component of argv[0] ("kvq verify"
  // when the kvq command hands over).
  std::string prog = argc > 0 && argv[0] ? argv[0] : "kvq-npy-verify";
  if (const auto slash = prog.find_last_of('/'); slash != std::string::npos) prog = prog.substr(slash + 1);
  try {
    npy_verify_request req;
    std::string make_dir;
    bool have_scheme = false;
    std::size_t rows = 8, cols = 64;
    std::uint64_t seed = 1;
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      const auto value = [&](const char* opt) -> std::string {
        if (i + 1 >= argc) throw std::invalid_argument(std::string(opt) + " needs a value");
        return argv[++i];
      };
      if (a == "--help" || a == "-h") {
        npy_verify_usage(out);
        return 0;
      } else if (a == "--list-schemes") {
        for (const auto& s : detail::element_schemes()) out << s.name << "\t" << s.what << "\n";
        return 0;
      } else if (a == "--scheme") {
        req.scheme = value("--scheme");
        have_scheme = true;
      } else if (a == "--input") {
        req.input = value("--input");
      } else if (a == "--codes") {
        req.codes = value("--codes");
      } else if (a == "--rounding") {
        req.r = detail::parse_rounding(value("--rounding"));
      } else if (a == "--overflow") {
        req.o = detail::parse_overflow(value("--overflow"));
      } else if (a == "--max-report") {
        req.max_listed = detail::parse_count("--max-report", value("--max-report"), 0, 1000000);
      } else if (a == "--make-example") {
        make_dir = value("--make-example");
      } else if (a == "--rows") {
        rows = detail::parse_count("--rows", value("--rows"), 1, 1u << 20);
      } else if (a == "--cols") {
        cols = detail::parse_count("--cols", value("--cols"), 1, 1u << 20);
      } else if (a == "--seed") {
        seed = detail::parse_count("--seed", value("--seed"), 0, static_cast<std::size_t>(-1));
      } else {
        throw std::invalid_argument("unknown argument '" + a + "' (see --help)");
      }
    }
    if (!make_dir.empty()) {
      if (rows * cols > (std::size_t{1} << 28)) throw std::invalid_argument("--rows * --cols exceeds 2^28 elements");
      const auto paths = npy_make_example(make_dir, req.scheme, rows, cols, seed);
      out << "wrote " << paths[0] << " and " << paths[1] << "\n"
          << "verify with: " << prog << " --scheme " << req.scheme << " --input " << paths[0] << " --codes "
          << paths[1] << "\n";
      return 0;
    }
    if (!have_scheme) throw std::invalid_argument("--scheme is required (known: " + detail::scheme_names() + ")");
    if (!detail::find_element_scheme(req.scheme))
      throw std::invalid_argument("unknown scheme '" + req.scheme + "' (known: " + detail::scheme_names() + ")");
    if (req.input.empty()) throw std::invalid_argument("--input is required");
    if (req.codes.empty()) throw std::invalid_argument("--codes is required");
    const npy_verify_result res = npy_verify(req);
    out << "scheme " << res.scheme << " (rounding " << to_string(req.r) << ", overflow " << to_string(req.o)
        << "), input shape " << npy::shape_string(res.shape) << "\n";
    print(out, res.codes, res.shape);
    out << (res.ok() ? "MATCH" : "MISMATCH") << "\n";
    return res.ok() ? 0 : 1;
  } catch (const std::exception& e) {
    std::string msg = e.what();
    for (char& c : msg)
      if (c == '\n') c = ' ';
    err << prog << ": error: " << msg << "\n";
    return 2;
  }
}

inline int npy_verify_main(int argc, char** argv) { return npy_verify_main(argc, argv, std::cout, std::cerr); }

}  // namespace kvq::verify
