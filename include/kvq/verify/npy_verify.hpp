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
///   Signed bytes ('|i1', a torch.int8 or np.int8 view) are rejected: pass
///   .view(torch.uint8) / .view(np.uint8).
///
/// When a block scheme differs, the result also explains every mismatch
/// (kvq/verify/explain.hpp): block, block amax, the scale before and after rounding on
/// both sides, the scaled element, both codes, and the class scale / element / nan
/// (code mismatches in a block whose scale differs count under that scale).
///
/// Element schemes (kvq::encode; --rounding rn|rz|ru|rd|rna, --overflow satfinite|nosat):
///   e4m3 e5m2 e3m2 e2m3 e2m1 e4m3fnuz e5m2fnuz ue4m3 ue8m0
/// Block schemes (kvq/block.hpp recipes; --tensor-value V gives the recipe's fp32 tensor
/// value — TE: the tensor amax; vLLM: k_scale; torchao two-level: per_tensor_scale —
/// otherwise the scheme's rule of the registry, kvq/kv/registry.hpp: 1.0 for fp8_e4m3 /
/// fp8_e5m2, else computed from the input as the recipe does): every registry scheme whose
/// format is a block recipe without zero points (nvfp4_*, mxfp*_{floor,rceil,rceil_torchao},
/// fp8_e4m3, fp8_e4m3_cal, fp8_e5m2, fp8_e5m2_cal, fp8_per_token_head with block = the
/// input's last dimension), by canonical name or alias.
///
/// The command-line program (tools/kvq/verify_cli.hpp: kvq verify and kvq-npy-verify) wraps
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

#include <kvq/block.hpp>
#include <kvq/kv/registry.hpp>
#include <kvq/core/bits.hpp>
#include <kvq/format/bulk.hpp>
#include <kvq/format/formats.hpp>
#include <kvq/format/policy.hpp>
#include <kvq/verify/compare.hpp>
#include <kvq/verify/explain.hpp>
#include <kvq/verify/generators.hpp>
#include <kvq/verify/npy.hpp>
#include <kvq/verify/scale_layout.hpp>

namespace kvq::verify {

/// What npy_verify() checks: the scheme, the three .npy paths and the options.
struct npy_verify_request {
  /// Scheme name: an element format (e4m3, ...) or a registry block scheme, by canonical
  /// name or alias.
  std::string scheme = "e4m3";
  /// \var input
  /// Path of the input .npy (float32, float16, or bfloat16 bits as uint16).
  /// \var codes
  /// Path of the kernel's codes .npy (uint8).
  /// \var scales
  /// Path of the kernel's block scales .npy: required for block schemes with block
  /// scales, must be empty for every other scheme.
  std::string input, codes, scales;  // .npy paths (scales: block schemes with block scales)
  /// Rounding of element schemes.
  rounding r = rounding::nearest_even;  // element schemes
  /// Overflow policy of element schemes.
  overflow o = overflow::satfinite;     // element schemes
  /// Block schemes with a tensor value: use tensor_value instead of computing it.
  bool has_tensor_value = false;        // block schemes with a tensor value: given, not computed
  /// The recipe's fp32 tensor value when has_tensor_value.
  float tensor_value = 1.0f;
  /// Mismatches listed per report.
  std::size_t max_listed = 10;
  /// Where the scales file keeps its uint8 block scales (kvq/verify/scale_layout.hpp):
  /// row-major, or cuBLAS / TransformerEngine's swizzled 128x4 tiles of the scale matrix
  /// (rows = the input's rows, columns = blocks per row), un-swizzled before comparing.
  scale_layout layout = scale_layout::row_major;
};

/// Reports of npy_verify(), and the explanation of block-scheme mismatches.
struct npy_verify_result {
  /// Canonical scheme name.
  std::string scheme;
  /// Shape of the input.
  std::vector<std::size_t> shape;        // of the input
  /// Shape of the scale matrix (rows, blocks per row), for the report's positions.
  std::vector<std::size_t> scale_shape;  // positions of the scales (blocks per row), for the report
  /// Comparison of the codes.
  report codes;
  /// Whether scales were compared (`scales` is meaningful).
  bool has_scales = false;
  /// Comparison of the block scales.
  report scales;
  /// The scheme has a tensor value (then tensor_value is the one used).
  bool has_tensor_value = false;  // the scheme has a tensor value ...
  /// The tensor value was given in the request, not computed from the input.
  bool tensor_value_given = false;
  /// The tensor value used.
  float tensor_value = 0.0f;      // ... and this is the one used
  /// Block schemes with a difference: every mismatch explained and classified
  /// (kvq/verify/explain.hpp: block, amax, scales before and after rounding, scaled element).
  bool has_explanation = false;
  /// The explanation (when has_explanation).
  explanation explained;
  /// True if the codes and (when compared) the scales match.
  bool ok() const { return codes.ok() && (!has_scales || scales.ok()); }
};

namespace detail {

// Packs 4-bit codes two per byte, element 2i in the low nibble.
inline std::vector<std::uint8_t> pack4(const std::vector<std::uint8_t>& c) {
  std::vector<std::uint8_t> p((c.size() + 1) / 2, 0);
  for (std::size_t i = 0; i < c.size(); ++i)
    p[i / 2] = static_cast<std::uint8_t>(p[i / 2] | ((c[i] & 0x0F) << (4 * (i % 2))));
  return p;
}

inline std::vector<std::uint8_t> unpack4(const std::vector<std::uint8_t>& p, std::size_t n) {
  std::vector<std::uint8_t> c(n);
  for (std::size_t i = 0; i < n; ++i) c[i] = unpack_code(p.data(), i, 4);
  return c;
}

// Compares kvq's codes (packed as `bits` per element when bits == 4) with the file's,
// accepting the packed layout or, for 4-bit codes, one code per byte.
template <class F>
report compare_code_file(const std::vector<std::uint8_t>& want_packed, int bits, std::size_t n,
                         const std::vector<std::uint8_t>& got, const std::vector<float>& x,
                         const std::string& codes_path, std::size_t max_listed, const std::string& label) {
  const std::size_t packed = bits == 4 ? (n + 1) / 2 : n;
  report r;
  if (got.size() == packed && bits == 4) {
    comparator<std::uint8_t, code_decoder<F>> c(label + ", packed", max_listed);
    c.add_packed(want_packed.data(), got.data(), n, 4, x.data());
    r = c.result();
  } else if (got.size() == n) {
    const std::vector<std::uint8_t> want = bits == 4 ? unpack4(want_packed, n) : want_packed;
    r = compare(want.data(), got.data(), n, label, code_decoder<F>{}, x.data(), max_listed);
    r.element_bits = bits;
  } else {
    throw std::invalid_argument("codes file '" + codes_path + "' holds " + std::to_string(got.size()) +
                                " bytes; the input has " + std::to_string(n) + " elements (expected " +
                                std::to_string(n) + " codes" +
                                (bits == 4 ? ", or " + std::to_string(packed) + " bytes packed two per byte" : "") +
                                ")");
  }
  return r;
}

// What a scheme entry needs to run.
struct scheme_io {
  const npy_verify_request* req;
  const npy::array* input;
  std::vector<float> x;         // input as float
  const npy::array* codes;      // may be null (make-example)
  const npy::array* scales;     // may be null
};

// Quantized buffers of the reference (for the example writer).
struct quantized {
  std::vector<std::uint8_t> codes;  // as stored (packed for 4-bit block schemes)
  bool packed4 = false;
  std::vector<std::uint8_t> scale_bytes;  // uint8 scales
  std::vector<float> scale_floats;        // float scales
  bool has_scales = false, float_scales = false;
  std::size_t blocks = 0;
  bool has_tensor_value = false;
  float tensor_value = 0.0f;
};

struct scheme_entry {
  std::string name;
  std::string what;
  bool block = false;
  bool has_scales = false;
  std::size_t fixed_block = 1;  // elements per block (0: the input's last dimension)
  int element_bits = 8;
  double element_max = 0.0;  // largest finite element value
  std::function<quantized(const scheme_io&)> quantize;
  std::function<npy_verify_result(const scheme_io&)> verify;
  std::function<std::vector<float>()> edge_cases;  // of the element format
};

// ---- element schemes --------------------------------------------------------------------

template <class F>
scheme_entry element_entry(const char* what) {
  using T = format_of_t<F>;
  scheme_entry e;
  e.name = format_name<T>();
  e.what = what;
  e.element_bits = T::bits;
  e.element_max = T::max_finite();
  e.edge_cases = [] { return edge_case_values<T>(); };
  e.quantize = [](const scheme_io& io) {
    quantized q;
    q.codes.resize(io.x.size());
    kvq::encode_n<T>(io.x.data(), io.x.size(), q.codes.data(), io.req->r, io.req->o);
    if (T::bits == 4) {
      q.codes = pack4(q.codes);
      q.packed4 = true;
    }
    return q;
  };
  e.verify = [e](const scheme_io& io) {
    const quantized q = e.quantize(io);
    npy_verify_result res;
    res.scheme = e.name;
    res.shape = io.input->shape;
    res.codes = compare_code_file<T>(q.codes, T::bits, io.x.size(), io.codes->as_u8(), io.x, io.req->codes,
                                     io.req->max_listed, std::string("codes (") + format_name<T>() + ")");
    return res;
  };
  return e;
}

// ---- block schemes ----------------------------------------------------------------------

template <class S>
std::size_t block_of(S& s, const npy::array& in) {
  if constexpr (std::is_same<S, kvq::block::fp8_per_token_head>::value) {
    if (in.shape.empty() || in.shape.back() == 0)
      throw std::invalid_argument(std::string(S::name) + ": the input needs a last dimension (head_dim) > 0");
    s.head_dim = in.shape.back();
  }
  return s.block_size();
}

template <class S, class In>
quantized block_quantize_as(const S& s, const typename In::storage* x, std::size_t n, const npy_verify_request& req,
                            kvq::kv::tensor_rule rule) {
  namespace b = kvq::block;
  const b::buffer_sizes z = b::sizes_of(s, n);
  quantized q;
  q.codes.resize(z.code_bytes);
  std::vector<typename S::scale_type> sc(z.scales);
  std::vector<float> zr(z.zeros);
  // No --tensor-value: the scheme's rule (kv/registry.hpp): 1.0 for `unit`, else the
  // recipe's own value from the data amax.
  const b::tensor_value tv = req.has_tensor_value                      ? b::tensor_value::given(req.tensor_value)
                             : rule == kvq::kv::tensor_rule::unit ? b::tensor_value::given(1.0f)
                                                                   : b::tensor_value::computed();
  q.tensor_value = b::quantize<S, In>(s, x, n, tv, q.codes.data(), q.codes.size(), sc.data(), sc.size(), zr.data(),
                                      zr.size());
  q.has_tensor_value = S::tensor != b::tensor_kind::none;
  q.packed4 = S::storage_bits == 4;
  q.blocks = z.blocks;
  q.has_scales = S::scale_bytes > 0;
  if constexpr (std::is_same<typename S::scale_type, float>::value) {
    q.float_scales = true;
    q.scale_floats = sc;
  } else {
    q.scale_bytes = sc;
  }
  return q;
}

// Explains the mismatches of a block scheme (kvq/verify/explain.hpp): the kernel's codes
// one per element (unpacked when the file is packed), its scales row-major.
template <class S>
void explain_into(const scheme_io& io, npy_verify_result& res, const typename S::scale_type* got_scales) {
  namespace b = kvq::block;
  S s{};
  block_of(s, *io.input);
  const std::size_t n = io.x.size();
  const std::vector<std::size_t>& sh = io.input->shape;
  std::size_t row_len = sh.empty() ? n : sh.back();
  if (row_len == 0 || row_len % s.block_size() != 0) row_len = 0;  // blocks run across rows: one row
  std::vector<std::uint8_t> got = io.codes->as_u8();
  if (S::storage_bits == 4 && got.size() != n) got = unpack4(got, n);
  const npy_verify_request& req = *io.req;
  const auto reg = kvq::kv::registry::global().lookup(res.scheme);
  const b::tensor_value tv = req.has_tensor_value ? b::tensor_value::given(req.tensor_value)
                             : (reg && reg->rule == kvq::kv::tensor_rule::unit) ? b::tensor_value::given(1.0f)
                                                                                : b::tensor_value::computed();
  if (io.input->type == npy::dtype::f32) {
    res.explained = explain<S, b::f32_input>(s, io.x.data(), n, row_len, tv, got.data(), got_scales);
  } else {
    const std::vector<std::uint16_t> h = io.input->as_u16();
    res.explained = io.input->type == npy::dtype::f16
                        ? explain<S, b::fp16_input>(s, h.data(), n, row_len, tv, got.data(), got_scales)
                        : explain<S, b::bf16_input>(s, h.data(), n, row_len, tv, got.data(), got_scales);
  }
  res.explained.scheme = res.scheme;
  res.has_explanation = true;
}

template <class S>
scheme_entry block_entry(const std::string& name, const std::string& what, kvq::kv::tensor_rule rule) {
  using E = typename S::element_format;
  scheme_entry e;
  e.name = name;
  e.what = what;
  e.block = true;
  e.has_scales = S::scale_bytes > 0;
  e.fixed_block = std::is_same<S, kvq::block::fp8_per_token_head>::value ? 0 : S{}.block_size();
  e.element_bits = S::storage_bits;
  e.element_max = E::max_finite();
  e.edge_cases = [] { return edge_case_values<E>(); };
  e.quantize = [rule](const scheme_io& io) {
    S s{};
    const std::size_t bs = block_of(s, *io.input);
    const std::size_t n = io.x.size();
    if (n % bs != 0)
      throw std::invalid_argument(std::string("input of ") + std::to_string(n) + " elements (shape " +
                                  npy::shape_string(io.input->shape) + ") is not a multiple of the block size " +
                                  std::to_string(bs));
    namespace b = kvq::block;
    if (io.input->type == npy::dtype::f32) return block_quantize_as<S, b::f32_input>(s, io.x.data(), n, *io.req, rule);
    const std::vector<std::uint16_t> h = io.input->as_u16();
    if (io.input->type == npy::dtype::f16) return block_quantize_as<S, b::fp16_input>(s, h.data(), n, *io.req, rule);
    return block_quantize_as<S, b::bf16_input>(s, h.data(), n, *io.req, rule);
  };
  e.verify = [e](const scheme_io& io) {
    const quantized q = e.quantize(io);
    const std::size_t n = io.x.size();
    npy_verify_result res;
    res.scheme = e.name;
    res.shape = io.input->shape;
    res.has_tensor_value = q.has_tensor_value;
    res.tensor_value_given = io.req->has_tensor_value;
    res.tensor_value = q.tensor_value;
    res.codes = compare_code_file<E>(q.codes, S::storage_bits, n, io.codes->as_u8(), io.x, io.req->codes,
                                     io.req->max_listed, std::string("codes (") + format_name<E>() + ")");
    if constexpr (S::scale_bytes > 0) {
      if (!io.scales)
        throw std::invalid_argument("scheme " + e.name + " stores one scale per block: --scales is required");
      const std::size_t bs = n / (q.blocks ? q.blocks : 1);
      const std::vector<std::size_t>& sh = io.input->shape;
      if (sh.size() >= 2 && bs != 0 && sh.back() % bs == 0) {
        res.scale_shape.assign(sh.begin(), sh.end() - 1);
        res.scale_shape.push_back(sh.back() / bs);
      }
      res.has_scales = true;
      if constexpr (std::is_same<typename S::scale_type, float>::value) {
        if (io.scales->type != npy::dtype::f32)
          throw std::invalid_argument("scales file '" + io.req->scales + "' is " + npy::name(io.scales->type) +
                                      "; scheme " + e.name + " has float32 scales");
        if (io.req->layout != scale_layout::row_major)
          throw std::invalid_argument("--scale-layout applies to uint8 block scales; scheme " + e.name +
                                      " has float32 scales (row-major only)");
        const std::vector<float> got = io.scales->to_float();
        if (got.size() != q.blocks)
          throw std::invalid_argument("scales file '" + io.req->scales + "' holds " + std::to_string(got.size()) +
                                      " scales; " + std::to_string(q.blocks) + " blocks expected");
        res.scales = compare(q.scale_floats.data(), got.data(), q.blocks, "scales (float32)", float_decoder{},
                             nullptr, io.req->max_listed);
        if (!res.ok()) explain_into<S>(io, res, got.data());
      } else {
        using SF = typename S::scale_format;
        if (io.scales->type != npy::dtype::u8)
          throw std::invalid_argument("scales file '" + io.req->scales + "' is " + npy::name(io.scales->type) +
                                      "; scheme " + e.name + " has uint8 scale codes");
        std::vector<std::uint8_t> got = io.scales->as_u8();
        if (io.req->layout == scale_layout::swizzled128x4) {
          const std::size_t row_len = sh.empty() ? n : sh.back();
          if (row_len == 0 || row_len % bs != 0)
            throw std::invalid_argument("--scale-layout swizzled128x4: rows of " + std::to_string(row_len) +
                                        " elements do not hold whole blocks of " + std::to_string(bs));
          got = unswizzle_scales(got, n / row_len, row_len / bs);
        }
        if (got.size() != q.blocks)
          throw std::invalid_argument("scales file '" + io.req->scales + "' holds " + std::to_string(got.size()) +
                                      " scales; " + std::to_string(q.blocks) + " blocks expected");
        res.scales = compare(q.scale_bytes.data(), got.data(), q.blocks,
                             std::string("scales (") + format_name<SF>() + ")", code_decoder<SF>{}, nullptr,
                             io.req->max_listed);
        if (!res.ok()) explain_into<S>(io, res, got.data());
      }
    } else {
      if (io.req->layout != scale_layout::row_major)
        throw std::invalid_argument("--scale-layout applies to uint8 block scales; scheme " + e.name + " has none");
      if (!res.ok()) explain_into<S>(io, res, nullptr);
    }
    return res;
  };
  return e;
}

inline const std::vector<scheme_entry>& schemes() {
  namespace b = kvq::block;
  static const std::vector<scheme_entry> v = [] {
    std::vector<scheme_entry> s;
    s.push_back(element_entry<fmt::e4m3>("FP8 E4M3 (OCP fn): max 448, NaN S.1111.111"));
    s.push_back(element_entry<fmt::e5m2>("FP8 E5M2: IEEE Inf/NaN, max 57344"));
    s.push_back(element_entry<fmt::e3m2>("FP6 E3M2: max 28, no Inf/NaN"));
    s.push_back(element_entry<fmt::e2m3>("FP6 E2M3: max 7.5, no Inf/NaN"));
    s.push_back(element_entry<fmt::e2m1>("FP4 E2M1: max 6, no Inf/NaN (codes one per byte or packed two per byte)"));
    s.push_back(element_entry<fmt::e4m3fnuz>("FP8 E4M3 fnuz: max 240, 0x80 NaN"));
    s.push_back(element_entry<fmt::e5m2fnuz>("FP8 E5M2 fnuz: max 57344, 0x80 NaN"));
    s.push_back(element_entry<fmt::ue4m3>("unsigned E4M3 (NVFP4 scale): max 448"));
    s.push_back(element_entry<fmt::ue8m0>("UE8M0 (MX scale): powers of two 2^-127..2^127, 0xFF NaN"));
    // Block schemes: every registry scheme whose format is a block recipe with one code
    // per element and no zero points (KIVI's asymmetric groups and INT8 are not read here).
    for (const std::string& n : kvq::kv::scheme_names()) {
      const kvq::kv::scheme& sch = kvq::kv::find_scheme(n);
      if (!sch.format) continue;
      std::visit(
          [&](const auto& f) {
            using T = std::decay_t<decltype(f)>;
            if constexpr (!std::is_same<T, kvq::kv::hp_format>::value && !kvq::kv::detail::is_kivi<T>::value &&
                          !std::is_same<T, b::int8_per_token_head>::value)
              s.push_back(block_entry<T>(sch.name, sch.description, sch.rule));
          },
          *sch.format);
    }
    return s;
  }();
  return v;
}

inline const scheme_entry* find_scheme(const std::string& name) {
  for (const auto& s : schemes())
    if (name == s.name) return &s;
  // An alias of a registry scheme (e.g. fp8_e4m3_per_tensor for fp8_e4m3_cal).
  if (const auto r = kvq::kv::registry::global().lookup(name))
    for (const auto& s : schemes())
      if (r->name == s.name) return &s;
  return nullptr;
}

inline const scheme_entry& require_scheme(const std::string& name) {
  if (const scheme_entry* s = find_scheme(name)) return *s;
  std::string known;
  for (const auto& e : schemes()) known += (known.empty() ? "" : ", ") + e.name;
  throw std::invalid_argument("unknown scheme '" + name + "' (known: " + known + ")");
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

/// Quantizes the input file with the scheme and compares with the codes (and scales)
/// files. Throws std::invalid_argument (bad scheme, files, shapes) or
/// std::runtime_error (I/O).
inline npy_verify_result npy_verify(const npy_verify_request& req) {
  const detail::scheme_entry& s = detail::require_scheme(req.scheme);
  if (!s.has_scales && !req.scales.empty())
    throw std::invalid_argument("scheme " + s.name + " has no block scales; drop --scales");
  if (!s.has_scales && req.layout != scale_layout::row_major)
    throw std::invalid_argument("scheme " + s.name +
                                " has no block scales; --scale-layout applies to uint8 block scales");
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
  npy::array scales;
  const bool have_scales = !req.scales.empty();
  if (have_scales) scales = npy::read(req.scales);
  detail::scheme_io io{&req, &in, in.to_float(), &codes, have_scales ? &scales : nullptr};
  return s.verify(io);
}

/// Writes DIR/input.npy (float32, rows x cols: the element format's edge cases, then
/// counter-based random values over a wide range), DIR/codes.npy (kvq's codes; 4-bit
/// codes packed two per byte) and, for schemes with block scales, DIR/scales.npy.
/// Returns the command line that verifies them (without the program name).
/// layout: how DIR/scales.npy keeps uint8 block scales (swizzled128x4: a flat buffer of
/// the padded 128x4 tiles, kvq/verify/scale_layout.hpp).
/// \throws std::invalid_argument for an unknown scheme, rows or cols of 0, odd cols for
///         4-bit codes, cols not a multiple of the scheme's fixed block size, or a
///         swizzled layout for a scheme without uint8 block scales; std::runtime_error or
///         a filesystem error on I/O failure.
inline std::string npy_make_example(const std::string& dir, const std::string& scheme, std::size_t rows = 8,
                                    std::size_t cols = 64, std::uint64_t seed = 1,
                                    scale_layout layout = scale_layout::row_major) {
  const detail::scheme_entry& s = detail::require_scheme(scheme);
  if (rows == 0 || cols == 0) throw std::invalid_argument("--rows and --cols must be positive");
  if (s.element_bits == 4 && cols % 2 != 0) throw std::invalid_argument("--cols must be even for 4-bit codes");
  if (s.fixed_block > 1 && cols % s.fixed_block != 0)
    throw std::invalid_argument("--cols " + std::to_string(cols) + " is not a multiple of the block size " +
                                std::to_string(s.fixed_block) + " of scheme " + s.name);
  if (layout != scale_layout::row_major && (!s.has_scales || s.fixed_block == 0))
    throw std::invalid_argument("--scale-layout " + std::string(to_string(layout)) +
                                " applies to uint8 block scales; scheme " + s.name + " has none");
  const std::size_t n = kvq::detail::checked_mul(rows, cols, "--rows x --cols");
  std::vector<float> x = s.edge_cases();
  // Block schemes: NaN, Inf and huge inputs would own whole blocks (or the tensor
  // amax); keep the element format's own edge cases up to twice its largest value.
  if (s.block) {
    std::vector<float> keep;
    for (float v : x)
      if (v == v && v <= 2.0 * s.element_max && v >= -2.0 * s.element_max) keep.push_back(v);
    x.swap(keep);
  }
  if (x.size() > n / 2) x.resize(n / 2);
  // The rest: random sign, exponent 2^-20 .. 2^19, random mantissa.
  for (std::uint64_t i = 0; x.size() < n; ++i) {
    const std::uint64_t r = detail::draw(seed, i);
    const std::uint32_t exp = 127u - 20u + static_cast<std::uint32_t>((r >> 24) % 40u);
    const std::uint32_t bits = (static_cast<std::uint32_t>(r >> 63) << 31) | (exp << 23) |
                               static_cast<std::uint32_t>(r & 0x7FFFFFu);
    x.push_back(kvq::bit_cast<float>(bits));
  }
  const npy::array input = npy::from_floats({rows, cols}, x);
  npy_verify_request req;
  req.scheme = scheme;
  detail::scheme_io io{&req, &input, x, nullptr, nullptr};
  const detail::quantized q = s.quantize(io);
  std::filesystem::create_directories(dir);
  const auto path = [&dir](const char* f) { return (std::filesystem::path(dir) / f).string(); };
  npy::write(path("input.npy"), input);
  npy::write(path("codes.npy"), npy::from_u8({rows, q.packed4 ? cols / 2 : cols}, q.codes));
  std::string cmd = "--scheme " + scheme + " --input " + path("input.npy") + " --codes " + path("codes.npy");
  if (q.has_scales) {
    const std::size_t per_row = q.blocks / rows;
    if (q.float_scales)
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
