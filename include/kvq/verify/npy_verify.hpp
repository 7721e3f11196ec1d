/// \file
/// kvq/verify/npy_verify.hpp — the command-line verifier for kernel authors who work
/// from Python: read a .npy input and the kernel's dumped codes (and block scales),
/// quantize the input with a named kvq scheme, compare bit for bit and print a
/// mismatch report.
///
///   kvq-npy-verify --scheme NAME --input X.npy --codes C.npy [--scales S.npy]
///                  [--scale-layout rowmajor|swizzled128x4] [--dump mismatches.csv] [options]
///   kvq-npy-verify --make-example DIR [--scheme NAME] [--rows R] [--cols C] [--seed S]
///   kvq-npy-verify --list-schemes | --help
///
/// Exit status: 0 everything matches, 1 something differs (the report says which
/// elements), 2 bad usage or bad input (one line on stderr naming the problem).
///
/// Files (all C order, little-endian; see kvq/verify/npy.hpp for what the reader accepts):
///   input   '<f4' float32, '<f2' float16 or '<u2' bfloat16 bits, any shape. Element
///           schemes widen 16-bit inputs to float exactly; block schemes read them with
///           the recipe's bf16/fp16 input path (kvq::block::bf16_input / fp16_input).
///   codes   '|u1'. Element schemes: one code per element, right-aligned, or for 4-bit
///           formats two per byte (element 2i in the low nibble, the cvt...e2m1x2 packing).
///           Block schemes: the packed buffer of kvq/block/api.hpp (4-bit elements two per
///           byte, low nibble first; 8-bit one per byte), or for 4-bit elements one code
///           per byte. The layout is recognised from the byte count.
///   scales  block schemes with block scales: one per block of consecutive elements of
///           the flattened input, row-major: '|u1' scale codes (NVFP4: e4m3, MX: ue8m0)
///           or '<f4' (fp8_per_token_head). With --scale-layout swizzled128x4 the uint8
///           scales are cuBLAS / TransformerEngine's 128x4 tiles (kvq/verify/scale_layout.hpp)
///           of the rows x blocks-per-row scale matrix, padded, any shape.
///   layouts --input-layout / --kernel-layout nhd|hnd: the order of the token and head
///           dimensions of the input and of the kernel's files (kvq/verify/kv_layout.hpp);
///           --page-layout vllm_nvfp4_k|vllm_nvfp4_v: the codes file is vLLM's NVFP4 KV
///           cache pages (codes and scales), the input [pages, page_size, heads, head_size].
///   Signed bytes ('|i1', a torch.int8 or np.int8 view) are rejected: pass
///   .view(torch.uint8) / .view(np.uint8).
///
/// When a block scheme differs, the result also explains every mismatch
/// (kvq/verify/explain.hpp): block, block amax, the scale before and after rounding on
/// both sides, the scaled element, both codes, and the class scale / element / nan
/// (code mismatches in a block whose scale differs count under that scale).
///
/// Element schemes (kvq::encode; --rounding rn|rz|ru|rd|rna, --overflow satfinite|nosat):
///   e4m3 e5m2 e3m2 e2m3 e2m1 e4m3fnuz e5m2fnuz e4m3b11fnuz ue4m3 ue8m0
/// Block schemes (kvq/block.hpp recipes; --tensor-value V gives the recipe's fp32 tensor
/// value — TE: the tensor amax; vLLM: k_scale; torchao two-level: per_tensor_scale —
/// otherwise the scheme's rule of the registry, kvq/kv/registry.hpp: 1.0 for fp8_e4m3 /
/// fp8_e5m2, else computed from the input as the recipe does): every registry scheme whose
/// format is a block recipe without zero points (nvfp4_*, mxfp*_{floor,rceil,rceil_torchao},
/// fp8_e4m3, fp8_e4m3_cal, fp8_e5m2, fp8_e5m2_cal, fp8_per_token_head and
/// int8_per_token_head with block = the input's last dimension), by canonical name or
/// alias.
///
/// npy_verify reads the files and calls the one verification entry point,
/// kvq::verify::check (kvq/verify/check.hpp), which also serves Python's kvq.verify; the
/// command-line program (tools/kvq/verify_cli.hpp: kvq verify and kvq-npy-verify) wraps
/// npy_verify and npy_make_example.
#pragma once

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdlib>
#include <cstdint>
#include <exception>
#include <filesystem>
#include <functional>
#include <iostream>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvq/core/input_file.hpp>

#include <kvq/core/bits.hpp>
#include <kvq/format/policy.hpp>
#include <kvq/verify/check.hpp>
#include <kvq/verify/hard_inputs.hpp>
#include <kvq/verify/kv_layout.hpp>
#include <kvq/verify/generators.hpp>
#include <kvq/verify/npy.hpp>
#include <kvq/verify/scale_layout.hpp>


namespace kvq::verify {

/// What npy_verify() checks: the scheme, the three .npy paths and the options.
struct npy_verify_request {
  /// Scheme name: an element format (e4m3, ...) or a registry block scheme, by canonical
  /// name or alias.
  std::string scheme = "e4m3";
  /// Path of the input .npy (float32, float16, or bfloat16 bits as uint16).
  std::string input;
  /// Path of the kernel's codes .npy (uint8).
  std::string codes;
  /// Path of the kernel's block scales .npy: required for block schemes with block
  /// scales, must be empty for every other scheme.
  std::string scales;
  /// Rounding of element schemes (block schemes follow their recipe).
  rounding r = rounding::nearest_even;
  /// Overflow policy of element schemes.
  overflow o = overflow::satfinite;
  /// Block schemes with a tensor value: use tensor_value instead of the scheme's rule.
  bool has_tensor_value = false;
  /// The recipe's fp32 tensor value when has_tensor_value.
  float tensor_value = 1.0f;
  /// Mismatches listed per report.
  std::size_t max_listed = 10;
  /// Where the scales file keeps its uint8 block scales (kvq/verify/scale_layout.hpp):
  /// row-major, or cuBLAS / TransformerEngine's swizzled 128x4 tiles of the scale matrix
  /// (rows = the input's rows, columns = blocks per row), un-swizzled before comparing.
  scale_layout layout = scale_layout::row_major;
  /// Order of the input's token and head dimensions (kvq/verify/kv_layout.hpp).
  kv_layout input_layout = kv_layout::nhd;
  /// Order of the token and head dimensions in the codes and scales files (with a page
  /// layout: the pages' row order).
  kv_layout kernel_layout = kv_layout::nhd;
  /// A paged format whose codes file holds codes and scales (then no scales file).
  page_layout page = page_layout::none;
};

/// The report of npy_verify(): check()'s (kvq/verify/check.hpp).
using npy_verify_result = verify_report;

namespace detail {

inline std::size_t parse_count(const std::string& opt, const std::string& v, std::size_t lo, std::size_t hi) {
  std::size_t pos = 0;
  unsigned long long x = 0;
  try {
    x = std::stoull(v, &pos, 10);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos != v.size() || v.empty() || v[0] < '0' || v[0] > '9' || x < lo || x > hi)
    throw std::invalid_argument(opt + " must be an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                                "], got '" + v + "'");
  return static_cast<std::size_t>(x);
}

// A float option. strtof sets ERANGE both on overflow and on a result in the subnormal
// range (C11 7.22.1.3: "underflow" is implementation-defined; glibc reports it for
// every subnormal result, exact ones included), so ERANGE alone does not make a value
// bad: a finite result is a valid number (0x1p-149, 1e-38); an infinite one from a
// finite text is an overflow. A text that rounds to zero though it is not zero is
// refused too, since the value asked for cannot be represented.
inline float parse_float(const std::string& opt, const std::string& v) {
  const std::string bad = opt + " must be a number, got '" + v + "'";
  if (v.empty() || std::isspace(static_cast<unsigned char>(v[0]))) throw std::invalid_argument(bad);
  char* end = nullptr;
  errno = 0;
  const float x = std::strtof(v.c_str(), &end);
  const int e = errno;
  if (end == v.c_str() || *end != '\0') throw std::invalid_argument(bad);
  if (e == ERANGE && std::isinf(x))
    throw std::invalid_argument(opt + " '" + v + "' overflows float (largest finite: 3.40282347e+38)");
  if (e == ERANGE && x == 0.0f)
    throw std::invalid_argument(opt + " '" + v + "' is below the smallest float subnormal (1.4e-45) and would be 0");
  return x;
}

// A 64-bit seed: decimal digits only (no sign, no spaces, which strtoull would accept
// and wrap), at most 2^64 - 1.
inline std::uint64_t parse_seed(const std::string& opt, const std::string& v) {
  const std::string bad = opt + " must be an integer in [0, 18446744073709551615], got '" + v + "'";
  if (v.empty() || v.size() > 20) throw std::invalid_argument(bad);
  std::uint64_t s = 0;
  for (char c : v) {
    if (c < '0' || c > '9') throw std::invalid_argument(bad);
    const auto d = static_cast<std::uint64_t>(c - '0');
    if (s > (UINT64_MAX - d) / 10) throw std::invalid_argument(bad);
    s = s * 10 + d;
  }
  return s;
}

}  // namespace detail

/// Reads the three files, checks the options against the scheme in the command's words
/// and hands the buffers to check(). Throws std::invalid_argument (bad scheme, files,
/// shapes) or std::runtime_error (I/O).
inline npy_verify_result npy_verify(const npy_verify_request& req) {
  const verifiable_scheme& s = find_verifiable(req.scheme);
  if (s.scales == scale_type::none && !req.scales.empty())
    throw std::invalid_argument("scheme " + s.name + " has no block scales; drop --scales");
  if (s.scales == scale_type::none && req.layout != scale_layout::row_major)
    throw std::invalid_argument("scheme " + s.name +
                                " has no block scales; --scale-layout applies to uint8 block scales");
  if (s.scales == scale_type::f32 && req.layout != scale_layout::row_major)
    throw std::invalid_argument("--scale-layout applies to uint8 block scales; scheme " + s.name +
                                " has float32 scales (row-major only)");
  if (!s.block && req.has_tensor_value)
    throw std::invalid_argument("scheme " + s.name + " is element-wise; --tensor-value applies to block schemes");
  // Not npy::read's job: a FIFO would block its open, a device would never end.
  kvq::detail::require_regular_file("--input", req.input);
  kvq::detail::require_regular_file("--codes", req.codes);
  if (!req.scales.empty()) kvq::detail::require_regular_file("--scales", req.scales);
  const npy::array in = npy::read(req.input);
  if (in.type == npy::dtype::u8)
    throw std::invalid_argument("input file '" + req.input +
                                "' is uint8; the input must be float32, float16 or bfloat16 bits (uint16)");
  const npy::array codes = npy::read(req.codes);
  if (codes.type != npy::dtype::u8)
    throw std::invalid_argument("codes file '" + req.codes + "' is " + npy::name(codes.type) + "; codes must be uint8");
  if (s.scales != scale_type::none && req.scales.empty() && req.page == page_layout::none)
    throw std::invalid_argument("scheme " + s.name + " stores one scale per block: --scales is required");
  npy::array scales;
  if (!req.scales.empty()) {
    scales = npy::read(req.scales);
    const npy::dtype want = s.scales == scale_type::f32 ? npy::dtype::f32 : npy::dtype::u8;
    if (scales.type != want)
      throw std::invalid_argument("scales file '" + req.scales + "' is " + npy::name(scales.type) + "; scheme " +
                                  s.name + (want == npy::dtype::f32 ? " has float32 scales" : " has uint8 scale codes"));
  }
  // The files' little-endian bytes as host values.
  const std::vector<float> x32 = in.type == npy::dtype::f32 ? in.to_float() : std::vector<float>{};
  const std::vector<std::uint16_t> x16 = in.type == npy::dtype::f32 ? std::vector<std::uint16_t>{} : in.as_u16();
  const std::vector<std::uint8_t> code_bytes = codes.as_u8();
  std::vector<std::uint8_t> scale_bytes;
  std::vector<float> scale_floats;
  verify_buffers b;
  b.input = in.type == npy::dtype::f32 ? static_cast<const void*>(x32.data()) : static_cast<const void*>(x16.data());
  b.input_dtype = in.type == npy::dtype::f32   ? input_type::f32
                  : in.type == npy::dtype::f16 ? input_type::f16
                                               : input_type::bf16;
  b.shape = in.shape;
  b.codes = code_bytes.data();
  b.code_bytes = code_bytes.size();
  if (!req.scales.empty()) {
    b.scale_dtype = s.scales;
    if (s.scales == scale_type::f32) {
      scale_floats = scales.to_float();
      b.scales = scale_floats.data();
      b.scale_count = scale_floats.size();
    } else {
      scale_bytes = scales.as_u8();
      b.scales = scale_bytes.data();
      b.scale_count = scale_bytes.size();
    }
  }
  b.input_name = "the input";
  b.codes_name = "codes file '" + req.codes + "'";
  b.scales_name = "scales file '" + req.scales + "'";
  verify_options o;
  if (!s.block) {
    o.round = req.r;
    o.over = req.o;
  }
  if (req.has_tensor_value) o.tensor_value = req.tensor_value;
  o.max_listed = req.max_listed;
  o.layout = req.layout;
  o.input_layout = req.input_layout;
  o.kernel_layout = req.kernel_layout;
  o.page = req.page;
  return check(s.name, b, o);
}

/// Writes DIR/input.npy (float32, rows x cols: the element format's edge cases, then
/// counter-based random values over a wide range), DIR/codes.npy (kvq's codes; 4-bit
/// codes packed two per byte) and, for schemes with block scales, DIR/scales.npy.
/// Returns the command line that verifies them (without the program name).
/// layout: how DIR/scales.npy keeps uint8 block scales (swizzled128x4: a flat buffer of
/// the padded 128x4 tiles, kvq/verify/scale_layout.hpp).
/// hard: the input is hard_inputs(scheme, rows, cols, seed) instead (exact ties at every
/// scale, scale-rounding boundaries, zero/subnormal/NaN/Inf blocks where the recipe
/// defines them: kvq/verify/hard_inputs.hpp).
/// \throws std::invalid_argument for an unknown scheme, rows or cols of 0, odd cols for
///         4-bit codes, cols not a multiple of the scheme's fixed block size, or a
///         swizzled layout for a scheme without uint8 block scales; std::runtime_error or
///         a filesystem error on I/O failure.
inline std::string npy_make_example(const std::string& dir, const std::string& scheme, std::size_t rows = 8,
                                    std::size_t cols = 64, std::uint64_t seed = 1,
                                    scale_layout layout = scale_layout::row_major, bool hard = false) {
  const detail::scheme_entry& e = detail::require_entry(scheme);
  const verifiable_scheme& s = e.info;
  if (rows == 0 || cols == 0) throw std::invalid_argument("--rows and --cols must be positive");
  if (s.element_bits == 4 && cols % 2 != 0) throw std::invalid_argument("--cols must be even for 4-bit codes");
  if (s.block_size > 1 && cols % s.block_size != 0)
    throw std::invalid_argument("--cols " + std::to_string(cols) + " is not a multiple of the block size " +
                                std::to_string(s.block_size) + " of scheme " + s.name);
  if (layout != scale_layout::row_major && s.scales != scale_type::u8)
    throw std::invalid_argument("--scale-layout " + std::string(to_string(layout)) +
                                " applies to uint8 block scales; scheme " + s.name + " has none");
  const std::size_t n = kvq::detail::checked_mul(rows, cols, "--rows x --cols");
  std::vector<float> x = hard ? hard_inputs(scheme, rows, cols, seed) : e.edge_cases();
  // Block schemes: NaN, Inf and huge inputs would own whole blocks (or the tensor
  // amax); keep the element format's own edge cases up to twice its largest value.
  if (s.block && !hard) {
    std::vector<float> keep;
    for (float v : x)
      if (v == v && v <= 2.0 * s.element_max && v >= -2.0 * s.element_max) keep.push_back(v);
    x.swap(keep);
  }
  if (!hard && x.size() > n / 2) x.resize(n / 2);
  // The rest: random sign, exponent 2^-20 .. 2^19, random mantissa.
  for (std::uint64_t i = 0; x.size() < n; ++i) {
    const std::uint64_t r = detail::draw(seed, i);
    const std::uint32_t exp = 127u - 20u + static_cast<std::uint32_t>((r >> 24) % 40u);
    const std::uint32_t bits = (static_cast<std::uint32_t>(r >> 63) << 31) | (exp << 23) |
                               static_cast<std::uint32_t>(r & 0x7FFFFFu);
    x.push_back(kvq::bit_cast<float>(bits));
  }
  const npy::array input = npy::from_floats({rows, cols}, x);
  verify_buffers b;
  b.input = x.data();
  b.shape = {rows, cols};
  const verify_options o;
  detail::check_io io;
  io.b = &b;
  io.o = &o;
  io.n = n;
  io.x = x;
  const detail::quantized q = e.quantize(io);
  std::filesystem::create_directories(dir);
  const auto path = [&dir](const char* f) { return (std::filesystem::path(dir) / f).string(); };
  npy::write(path("input.npy"), input);
  npy::write(path("codes.npy"), npy::from_u8({rows, q.packed4 ? cols / 2 : cols}, q.codes));
  std::string cmd = "--scheme " + scheme + " --input " + path("input.npy") + " --codes " + path("codes.npy");
  if (s.scales != scale_type::none) {
    const std::size_t per_row = q.blocks / rows;
    if (s.scales == scale_type::f32)
      npy::write(path("scales.npy"), npy::from_floats({rows, per_row}, q.scale_floats));
    else if (layout == scale_layout::swizzled128x4)
      npy::write(path("scales.npy"),
                 npy::from_u8({swizzled_size(rows, per_row)}, swizzle_scales(q.scale_bytes, rows, per_row)));
    else
      npy::write(path("scales.npy"), npy::from_u8({rows, per_row}, q.scale_bytes));
    cmd += " --scales " + path("scales.npy");
    if (layout != scale_layout::row_major) cmd += std::string(" --scale-layout ") + to_string(layout);
  }
  return cmd;
}

}  // namespace kvq::verify
