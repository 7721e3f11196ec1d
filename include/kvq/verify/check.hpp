/// \file
/// kvq/verify/check.hpp — the one verification entry point. A kernel engineer hands
/// over the input tensor and what the kernel wrote (codes, block scales); check()
/// quantizes the input with kvq's scheme, compares both buffers bit for bit and, for a
/// block scheme that differs, explains every mismatch (kvq/verify/explain.hpp). The
/// command line (`kvq verify`, kvq-npy-verify), the .npy path (npy_verify,
/// kvq/verify/npy_verify.hpp) and Python's `kvq.verify` read their arguments and call
/// check(); they differ only in how they read and print.
///
///   const kvq::verify::verify_report r = kvq::verify::check("nvfp4_te",
///       {x, kvq::verify::input_type::f32, {rows, cols}, codes, code_bytes,
///        scales, kvq::verify::scale_type::u8, n_scales}, {});
///   kvq::verify::print(std::cout, r);          // what `kvq verify` prints
///   kvq::verify::write_mismatch_csv("m.csv", r.explained);   // `kvq verify --dump`
///
/// Schemes: an element format (e4m3 e5m2 e3m2 e2m3 e2m1 e4m3fnuz e5m2fnuz e4m3b11fnuz ue4m3 ue8m0;
/// kvq::encode with a rounding and an overflow policy), or a scheme of the registry
/// (kvq/kv/registry.hpp) by canonical name or alias whose format is a block recipe
/// without zero points: nvfp4_*, mx*, fp8_e4m3[_cal], fp8_e5m2[_cal],
/// fp8_per_token_head and int8_per_token_head (block = the input's last dimension).
///
/// Buffers (C order):
///   input   float32, float16 or bfloat16 bits; any shape. Element formats widen 16-bit
///           inputs to float exactly; block recipes read them through their bf16/fp16
///           input path (kvq::block::bf16_input / fp16_input).
///   codes   uint8. Packed as the kernel stores them (kvq/block/pack.hpp: 4-bit codes
///           two per byte, element 2i in the low nibble; 8-bit one per byte), or, for
///           4-bit codes, one code per byte. The byte count tells which.
///   scales  one per block of consecutive elements of the flattened input, row-major:
///           uint8 scale codes (NVFP4: e4m3, MX: ue8m0) or float32 (per-token-head);
///           uint8 scales may come in cuBLAS / TransformerEngine's swizzled 128x4 tiles
///           (verify_options::layout, kvq/verify/scale_layout.hpp).
///
/// KV tensors (kvq/verify/kv_layout.hpp): when the kernel keeps the token and head
/// dimensions (the two before the last) in the other order than the input
/// (verify_options::input_layout != kernel_layout, NHD vs HND), its codes and scales are
/// read in the input's order before comparing. With verify_options::page set to a vLLM
/// NVFP4 side, `codes` is the whole page buffer ([K data | K scales | V data | V scales]
/// per page), the input has shape [pages, page_size, heads, head_size], no scales are
/// passed and kernel_layout is the pages' row order.
///
/// The tensor value of a block recipe is the caller's when given, else the registry's
/// rule (kvq::kv::tensor_value_for: 1.0 for fp8_e4m3 / fp8_e5m2, else computed from the
/// input as the recipe does).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include <kvq/block.hpp>
#include <kvq/block/pack.hpp>
#include <kvq/core/bits.hpp>
#include <kvq/core/error.hpp>
#include <kvq/format/bulk.hpp>
#include <kvq/format/formats.hpp>
#include <kvq/format/policy.hpp>
#include <kvq/kv/registry.hpp>
#include <kvq/verify/compare.hpp>
#include <kvq/verify/explain.hpp>
#include <kvq/verify/generators.hpp>
#include <kvq/verify/kv_layout.hpp>
#include <kvq/verify/scale_layout.hpp>

namespace kvq::verify {

/// Element type of the input tensor.
enum class input_type : unsigned char {
  f32,   ///< float32
  f16,   ///< IEEE binary16
  bf16,  ///< bfloat16 bits (uint16)
};

/// Element type of the kernel's block scales.
enum class scale_type : unsigned char {
  none,  ///< no scales given
  u8,    ///< uint8 scale codes (e4m3, ue8m0)
  f32,   ///< float32 scales
};

/// The buffers check() compares. Borrowed, not copied: they must outlive the call.
struct verify_buffers {
  /// The input tensor, `shape` elements of `input_dtype`.
  const void* input = nullptr;
  /// Element type of `input`.
  input_type input_dtype = input_type::f32;
  /// Shape of the input (C order); its product is the element count, an empty shape
  /// one element. Its last dimension is the row: the block of per-token-head schemes,
  /// and the scale matrix's columns are blocks per row when blocks tile a row.
  std::vector<std::size_t> shape;
  /// The kernel's codes (see the file comment for the packing).
  const std::uint8_t* codes = nullptr;
  /// Number of bytes at `codes`.
  std::size_t code_bytes = 0;
  /// The kernel's block scales, `scale_count` of `scale_dtype`; null with
  /// scale_type::none when the caller has none.
  const void* scales = nullptr;
  /// Element type of `scales`.
  scale_type scale_dtype = scale_type::none;
  /// Number of scales at `scales` (uint8 bytes or floats).
  std::size_t scale_count = 0;
  /// \var input_name
  /// How error messages name the input ("x", "input file 'x.npy'").
  /// \var codes_name
  /// How error messages name the codes.
  /// \var scales_name
  /// How error messages name the scales.
  std::string input_name = "the input", codes_name = "codes", scales_name = "scales";
};

/// How check() quantizes and reports.
struct verify_options {
  /// Rounding of element formats (default nearest_even); refused for block schemes,
  /// which follow their recipe.
  std::optional<rounding> round;
  /// Overflow policy of element formats (default satfinite); refused for block schemes.
  std::optional<overflow> over;
  /// The recipe's fp32 tensor value (TE: the tensor amax; vLLM: k_scale; torchao
  /// two-level: per_tensor_scale); none: the scheme's rule. Refused for element formats.
  std::optional<float> tensor_value;
  /// Mismatches listed per buffer comparison (the explanation keeps every one).
  std::size_t max_listed = 10;
  /// Where uint8 block scales are kept: row-major, or the swizzled 128x4 tiles of the
  /// (rows x blocks per row) scale matrix, un-swizzled before comparing.
  scale_layout layout = scale_layout::row_major;
  /// Order of the input's token and head dimensions (the two before the last).
  kv_layout input_layout = kv_layout::nhd;
  /// Order of the token and head dimensions in the kernel's codes and scales; when it
  /// differs from input_layout they are exchanged before comparing (the input needs three
  /// or more dimensions; leading ones are kept).
  kv_layout kernel_layout = kv_layout::nhd;
  /// A paged format holding codes and scales in one buffer (kvq/verify/kv_layout.hpp).
  page_layout page = page_layout::none;
  /// Explain the mismatches of block schemes (block, amax, scales, class).
  bool explain = true;
  /// On a block-scheme mismatch, quantize the input with the other registry schemes of the
  /// same format (element format, scale format, block size: nvfp4_te, nvfp4_te_enc_div,
  /// nvfp4_vllm, nvfp4_torchao, ...; mxfp8_e4m3_floor, mxfp8_e4m3_rceil, ...) and report
  /// those whose output equals the kernel's bit for bit (verify_report::matches).
  bool identify = true;
};

/// Where the tensor value of a report came from.
enum class tensor_value_source : unsigned char {
  none,      ///< the scheme has no tensor value
  given,     ///< verify_options::tensor_value
  fixed,     ///< the scheme's fixed value (registry rule `unit`: 1.0)
  computed,  ///< computed from the input as the recipe does
};

/// What check() found: both comparisons, the tensor value used and, for block schemes
/// that differ, the explanation of every mismatch.
struct verify_report {
  /// Canonical scheme name.
  std::string scheme;
  /// True for a block scheme, false for an element format.
  bool block = false;
  /// Rounding used (element formats).
  rounding round = rounding::nearest_even;
  /// Overflow policy used (element formats).
  overflow over = overflow::satfinite;
  /// Shape of the input.
  std::vector<std::size_t> shape;
  /// Shape of the scale matrix (the input's leading dimensions, blocks per row) when
  /// blocks tile a row of a 2-D or higher input, else empty; for the report's positions.
  std::vector<std::size_t> scale_shape;
  /// Comparison of the codes.
  report codes;
  /// Whether scales were compared (`scales` is meaningful).
  bool has_scales = false;
  /// Comparison of the block scales.
  report scales;
  /// The scheme has a tensor value (then tensor_value is the one used).
  bool has_tensor_value = false;
  /// The tensor value was given, not computed or fixed.
  bool tensor_value_given = false;
  /// Where the tensor value came from.
  tensor_value_source tensor_source = tensor_value_source::none;
  /// The tensor value used.
  float tensor_value = 0.0f;
  /// Block schemes with a difference: every mismatch explained and classified.
  bool has_explanation = false;
  /// The explanation (when has_explanation; empty otherwise, so its CSV is the header).
  explanation explained;
  /// On a mismatch (verify_options::identify): the other schemes of the same format whose
  /// codes and scales equal the kernel's exactly, in registry order. Each is an operation
  /// order the kernel follows; empty when none does or the output matched.
  std::vector<std::string> matches;
  /// True if the codes and (when compared) the scales match.
  bool ok() const { return codes.ok() && (!has_scales || scales.ok()); }
};

/// A name check() accepts, as the command's --list-schemes and adapters see it.
struct verifiable_scheme {
  /// Canonical name.
  std::string name;
  /// One-line description.
  std::string description;
  /// True for a block scheme, false for an element format.
  bool block = false;
  /// The block scales' type (scale_type::none: the scheme stores none).
  scale_type scales = scale_type::none;
  /// Elements per block: 1 for element formats, 0 for the input's last dimension.
  std::size_t block_size = 1;
  /// Bits per stored element code (4 or 8).
  int element_bits = 8;
  /// Largest finite element value (int8: 127).
  double element_max = 0.0;
  /// Mismatches are explained (block schemes with minifloat codes; not int8 codes).
  bool explained = false;
};

namespace detail {

// What a scheme entry works on: the caller's buffers and options, and the input as
// float (widened exactly from 16-bit inputs) for the reports and element formats.
struct check_io {
  const verify_buffers* b = nullptr;
  const verify_options* o = nullptr;
  std::size_t n = 0;
  std::vector<float> x;
};

// kvq's buffers for the input (also what npy_make_example writes).
struct quantized {
  std::vector<std::uint8_t> codes;  // packed as the kernel stores them
  bool packed4 = false;
  std::vector<std::uint8_t> scale_bytes;
  std::vector<float> scale_floats;
  std::size_t blocks = 0;
  float tensor_value = 0.0f;
};

struct scheme_entry {
  verifiable_scheme info;
  // Element format, scale format and block size ("e2m1/e4m3/16"); empty for element
  // formats. Entries of one family are the orders check() tries on a mismatch.
  std::string family;
  kvq::block::tensor_kind tensor = kvq::block::tensor_kind::none;
  std::function<quantized(const check_io&)> quantize;
  std::function<verify_report(const check_io&)> verify;
  std::function<std::vector<float>()> edge_cases;  // of the element format
};

template <class T>
struct is_minifloat : std::false_type {};
template <bool S, int E, int M, int B, kvq::specials Sp, bool Sub>
struct is_minifloat<kvq::minifloat_format<S, E, M, B, Sp, Sub>> : std::true_type {};

template <class E>
std::string codes_label() {
  if constexpr (is_minifloat<E>::value) return std::string("codes (") + format_name<E>() + ")";
  else return "codes (int" + std::to_string(E::bits) + ")";
}

template <class E>
using code_decoder_of = std::conditional_t<is_minifloat<E>::value, code_decoder<E>, no_decoder>;

inline std::size_t element_count(const std::vector<std::size_t>& shape) {
  std::size_t n = 1;
  for (std::size_t d : shape) n = kvq::detail::checked_mul(n, d, "the input's shape");
  return n;
}

inline std::string shape_text(const std::vector<std::size_t>& s) {
  std::string out = "(";
  for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

inline const float* f32_of(const verify_buffers& b) { return static_cast<const float*>(b.input); }
inline const std::uint16_t* u16_of(const verify_buffers& b) { return static_cast<const std::uint16_t*>(b.input); }

// Compares kvq's codes (packed when bits == 4) with the kernel's, which may be packed
// or, for 4-bit codes, one per byte.
template <class E>
report compare_codes_of(const std::vector<std::uint8_t>& want_packed, int bits, const check_io& io) {
  const std::size_t n = io.n;
  const std::size_t packed = kvq::block::packed_bytes(n, bits);
  const std::size_t got_n = io.b->code_bytes;
  const std::uint8_t* got = io.b->codes;
  const std::size_t max_listed = io.o->max_listed;
  if (got_n == packed && bits == 4) {
    comparator<std::uint8_t, code_decoder_of<E>> c(codes_label<E>() + ", packed", max_listed);
    c.add_packed(want_packed.data(), got, n, 4, io.x.data());
    return c.result();
  }
  if (got_n == n) {
    std::vector<std::uint8_t> want(n);
    kvq::block::unpack_codes(want_packed.data(), n, bits, want.data());
    report r = compare(want.data(), got, n, codes_label<E>(), code_decoder_of<E>{}, io.x.data(), max_listed);
    r.element_bits = bits;
    return r;
  }
  throw std::invalid_argument(io.b->codes_name + " holds " + std::to_string(got_n) + " bytes; " +
                              io.b->input_name + " has " + std::to_string(n) + " elements (expected " +
                              std::to_string(n) + " codes" +
                              (bits == 4 ? ", or " + std::to_string(packed) + " bytes packed two per byte" : "") + ")");
}

// ---- element formats ------------------------------------------------------------------

template <class F>
scheme_entry element_entry(const char* what) {
  using T = format_of_t<F>;
  scheme_entry e;
  e.info.name = format_name<T>();
  e.info.description = what;
  e.info.element_bits = T::bits == 4 ? 4 : 8;
  e.info.element_max = T::max_finite();
  e.edge_cases = [] { return edge_case_values<T>(); };
  e.quantize = [](const check_io& io) {
    quantized q;
    std::vector<std::uint8_t> c(io.n);
    kvq::encode_n<T>(io.x.data(), io.n, c.data(), io.o->round.value_or(rounding::nearest_even),
                     io.o->over.value_or(overflow::satfinite));
    if (T::bits == 4) {
      q.codes.resize(kvq::block::packed_bytes(io.n, 4));
      kvq::block::pack_codes(c.data(), io.n, 4, q.codes.data());
      q.packed4 = true;
    } else {
      q.codes = std::move(c);
    }
    return q;
  };
  e.verify = [q = e.quantize, name = e.info.name](const check_io& io) {
    if (io.b->scale_dtype != scale_type::none)
      throw std::invalid_argument("element format " + name + " has no scales");
    if (io.o->tensor_value)
      throw std::invalid_argument("scheme " + name + " is element-wise; a tensor value applies to block schemes");
    if (io.o->layout != scale_layout::row_major)
      throw std::invalid_argument("element format " + name + " has no scales; the scale layout does not apply");
    verify_report res;
    res.scheme = name;
    res.round = io.o->round.value_or(rounding::nearest_even);
    res.over = io.o->over.value_or(overflow::satfinite);
    res.shape = io.b->shape;
    res.codes = compare_codes_of<T>(q(io).codes, T::bits == 4 ? 4 : 8, io);
    return res;
  };
  return e;
}

// ---- block schemes --------------------------------------------------------------------

template <class S>
constexpr bool row_block() {
  return kvq::kv::detail::is_per_token_head<S>::value;
}

// The recipe set up for the input: per-token-head recipes take the last dimension as
// their block. Blocks run over the flattened input and need not tile a row.
template <class S>
S recipe_for(const check_io& io, const std::string& name) {
  S s{};
  if constexpr (row_block<S>()) {
    const auto& sh = io.b->shape;
    if (sh.empty() || sh.back() == 0)
      throw std::invalid_argument("scheme " + name + " needs rows of length > 0 (the last dimension is its head_dim)");
    s.head_dim = sh.back();
  }
  if (io.n % s.block_size() != 0)
    throw std::invalid_argument(io.b->input_name + " of " + std::to_string(io.n) + " elements (shape " +
                                shape_text(io.b->shape) + ") is not a multiple of the block size " +
                                std::to_string(s.block_size()) + " of scheme " + name);
  return s;
}

// Elements per row when blocks tile a row, else 0 (one row: the flattened input).
inline std::size_t tiled_row(const check_io& io, std::size_t bs) {
  const auto& sh = io.b->shape;
  const std::size_t row = sh.empty() ? io.n : sh.back();
  return row == 0 || bs == 0 || row % bs != 0 ? 0 : row;
}

template <class S>
kvq::block::tensor_value tensor_value_of(const check_io& io, const kvq::kv::scheme& reg) {
  const std::optional<float> v = kvq::kv::tensor_value_for(reg, io.o->tensor_value);
  return v ? kvq::block::tensor_value::given(*v) : kvq::block::tensor_value::computed();
}

template <class S>
quantized quantize_block(const S& s, const check_io& io, kvq::block::tensor_value tv) {
  namespace b = kvq::block;
  const b::buffer_sizes z = b::sizes_of(s, io.n);
  quantized q;
  q.codes.resize(z.code_bytes);
  std::vector<typename S::scale_type> sc(z.scales);
  std::vector<float> zr(z.zeros);
  const verify_buffers& bf = *io.b;
  switch (bf.input_dtype) {
    case input_type::f32:
      q.tensor_value = b::quantize<S, b::f32_input>(s, f32_of(bf), io.n, tv, q.codes.data(), q.codes.size(), sc.data(),
                                                    sc.size(), zr.data(), zr.size());
      break;
    case input_type::f16:
      q.tensor_value = b::quantize<S, b::fp16_input>(s, u16_of(bf), io.n, tv, q.codes.data(), q.codes.size(),
                                                     sc.data(), sc.size(), zr.data(), zr.size());
      break;
    case input_type::bf16:
      q.tensor_value = b::quantize<S, b::bf16_input>(s, u16_of(bf), io.n, tv, q.codes.data(), q.codes.size(),
                                                     sc.data(), sc.size(), zr.data(), zr.size());
      break;
  }
  q.packed4 = S::storage_bits == 4;
  q.blocks = z.blocks;
  if constexpr (std::is_same<typename S::scale_type, float>::value) q.scale_floats = std::move(sc);
  else if constexpr (S::scale_bytes > 0) q.scale_bytes = std::move(sc);
  return q;
}

// Explains the mismatches (kvq/verify/explain.hpp) from the kernel's codes one per
// element and its scales row-major.
template <class S>
void explain_into(const S& s, const check_io& io, kvq::block::tensor_value tv, verify_report& res,
                  const typename S::scale_type* got_scales) {
  namespace b = kvq::block;
  const std::size_t n = io.n;
  std::vector<std::uint8_t> got(io.b->codes, io.b->codes + io.b->code_bytes);
  if (S::storage_bits == 4 && got.size() != n) {
    got.assign(n, 0);
    b::unpack_codes(io.b->codes, n, 4, got.data());
  }
  const std::size_t row_len = tiled_row(io, s.block_size());
  const verify_buffers& bf = *io.b;
  switch (bf.input_dtype) {
    case input_type::f32:
      res.explained = explain<S, b::f32_input>(s, f32_of(bf), n, row_len, tv, got.data(), got_scales);
      break;
    case input_type::f16:
      res.explained = explain<S, b::fp16_input>(s, u16_of(bf), n, row_len, tv, got.data(), got_scales);
      break;
    case input_type::bf16:
      res.explained = explain<S, b::bf16_input>(s, u16_of(bf), n, row_len, tv, got.data(), got_scales);
      break;
  }
  res.explained.scheme = res.scheme;
  res.has_explanation = true;
}

template <class S>
scheme_entry block_entry(const kvq::kv::scheme& reg) {
  using E = typename S::element_format;
  scheme_entry e;
  e.info.name = reg.name;
  e.info.description = reg.description;
  e.info.block = true;
  e.info.scales = S::scale_bytes == 0                                      ? scale_type::none
                  : std::is_same<typename S::scale_type, float>::value ? scale_type::f32
                                                                          : scale_type::u8;
  e.info.block_size = row_block<S>() ? 0 : S{}.block_size();
  e.info.element_bits = S::storage_bits;
  e.info.explained = is_minifloat<E>::value;
  e.tensor = S::tensor;
  {
    std::string sf = "none";
    if constexpr (std::is_same<typename S::scale_type, float>::value) sf = "f32";
    else if constexpr (S::scale_bytes > 0) sf = format_name<typename S::scale_format>();
    std::string el;
    if constexpr (is_minifloat<E>::value) el = format_name<E>();
    else el = "int" + std::to_string(E::bits);
    e.family = el + "/" + sf + "/" + (row_block<S>() ? std::string("row") : std::to_string(S{}.block_size()));
  }
  if constexpr (is_minifloat<E>::value) {
    e.info.element_max = E::max_finite();
    e.edge_cases = [] { return edge_case_values<E>(); };
  } else {
    e.info.element_max = 127.0;
    e.edge_cases = [] { return std::vector<float>{}; };
  }
  const std::string name = reg.name;
  const kvq::kv::scheme* regp = &reg;  // the registry never removes a scheme
  e.quantize = [name, regp](const check_io& io) {
    const S s = recipe_for<S>(io, name);
    return quantize_block(s, io, tensor_value_of<S>(io, *regp));
  };
  e.verify = [name, regp](const check_io& io) {
    const verify_options& o = *io.o;
    const verify_buffers& bf = *io.b;
    if (o.round || o.over)
      throw std::invalid_argument("rounding/overflow apply to element formats; " + name + " follows its recipe");
    if (S::scale_bytes == 0 && bf.scale_dtype != scale_type::none)
      throw std::invalid_argument("scheme " + name + " has no block scales");
    if ((S::scale_bytes == 0 || std::is_same<typename S::scale_type, float>::value) &&
        o.layout != scale_layout::row_major)
      throw std::invalid_argument("the scale layout applies to uint8 block scales; scheme " + name +
                                  (S::scale_bytes == 0 ? " has none" : " has float32 scales (row-major only)"));
    const S s = recipe_for<S>(io, name);
    const kvq::block::tensor_value tv = tensor_value_of<S>(io, *regp);
    const quantized q = quantize_block(s, io, tv);
    verify_report res;
    res.scheme = name;
    res.block = true;
    res.shape = bf.shape;
    if (S::tensor != kvq::block::tensor_kind::none) {
      res.has_tensor_value = true;
      res.tensor_value = q.tensor_value;
      res.tensor_value_given = o.tensor_value.has_value();
      res.tensor_source = o.tensor_value                                ? tensor_value_source::given
                          : regp->rule == kvq::kv::tensor_rule::unit ? tensor_value_source::fixed
                                                                       : tensor_value_source::computed;
    }
    res.codes = compare_codes_of<E>(q.codes, S::storage_bits, io);
    const std::size_t bs = s.block_size();
    if constexpr (S::scale_bytes > 0) {
      using T = typename S::scale_type;
      if (bf.scale_dtype == scale_type::none)
        throw std::invalid_argument("scheme " + name + " stores one scale per block; " + bf.scales_name +
                                    " is required");
      const bool want_float = std::is_same<T, float>::value;
      if (want_float != (bf.scale_dtype == scale_type::f32))
        throw std::invalid_argument(bf.scales_name + " is " + (want_float ? "uint8" : "float32") + "; scheme " + name +
                                    (want_float ? " has float32 scales" : " has uint8 scale codes"));
      if (bf.scale_count > 0 && bf.scales == nullptr) throw std::invalid_argument(bf.scales_name + " is null");
      const std::vector<std::size_t>& sh = bf.shape;
      if (sh.size() >= 2 && sh.back() % bs == 0) {
        res.scale_shape.assign(sh.begin(), sh.end() - 1);
        res.scale_shape.push_back(sh.back() / bs);
      }
      const T* p = static_cast<const T*>(bf.scales);
      std::vector<T> got(p, p + bf.scale_count);
      if constexpr (!std::is_same<T, float>::value) {
        if (o.layout == scale_layout::swizzled128x4) {
          const std::size_t row_len = tiled_row(io, bs);
          if (row_len == 0)
            throw std::invalid_argument("swizzled128x4 scales: rows of " + std::to_string(sh.empty() ? io.n : sh.back()) +
                                        " elements do not hold whole blocks of " + std::to_string(bs));
          got = unswizzle_scales(got, io.n / row_len, row_len / bs);
        }
      }
      if (got.size() != q.blocks)
        throw std::invalid_argument(bf.scales_name + " holds " + std::to_string(got.size()) + " scales; " +
                                    std::to_string(q.blocks) + " blocks expected");
      res.has_scales = true;
      if constexpr (std::is_same<T, float>::value) {
        res.scales = compare(q.scale_floats.data(), got.data(), q.blocks, "scales (float32)", float_decoder{}, nullptr,
                             o.max_listed);
      } else {
        using SF = typename S::scale_format;
        res.scales = compare(q.scale_bytes.data(), got.data(), q.blocks,
                             std::string("scales (") + format_name<SF>() + ")", code_decoder<SF>{}, nullptr,
                             o.max_listed);
      }
      // Integer codes have no explanation (explain() decodes minifloat codes).
      if constexpr (is_minifloat<E>::value)
        if (o.explain && !res.ok()) explain_into(s, io, tv, res, got.data());
    } else {
      if constexpr (is_minifloat<E>::value)
        if (o.explain && !res.ok()) explain_into(s, io, tv, res, static_cast<const typename S::scale_type*>(nullptr));
    }
    return res;
  };
  return e;
}

inline const std::vector<scheme_entry>& entries() {
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
    s.push_back(element_entry<fmt::e4m3b11fnuz>("FP8 E4M3 bias 11 fnuz: max 30, 0x80 NaN"));
    s.push_back(element_entry<fmt::ue4m3>("unsigned E4M3 (NVFP4 scale): max 448"));
    s.push_back(element_entry<fmt::ue8m0>("UE8M0 (MX scale): powers of two 2^-127..2^127, 0xFF NaN"));
    // Every registry scheme whose format is a block recipe without zero points (KIVI's
    // asymmetric groups are not read here).
    for (const std::string& n : kvq::kv::scheme_names()) {
      const kvq::kv::scheme& sch = kvq::kv::find_scheme(n);
      if (!sch.format) continue;
      std::visit(
          [&](const auto& f) {
            using T = std::decay_t<decltype(f)>;
            if constexpr (!std::is_same<T, kvq::kv::hp_format>::value) {
              if constexpr (!T::has_zero_point) s.push_back(block_entry<T>(sch));
            }
          },
          *sch.format);
    }
    return s;
  }();
  return v;
}

inline const scheme_entry* find_entry(const std::string& name) {
  for (const auto& s : entries())
    if (name == s.info.name) return &s;
  if (const auto r = kvq::kv::registry::global().lookup(name))  // an alias
    for (const auto& s : entries())
      if (r->name == s.info.name) return &s;
  return nullptr;
}

inline std::string verifiable_list() {
  std::string known;
  for (const auto& e : entries()) known += (known.empty() ? "" : ", ") + e.info.name;
  return known;
}

// The entry of a name, or std::invalid_argument saying why the name is refused.
inline const scheme_entry& require_entry(const std::string& name) {
  if (const scheme_entry* s = find_entry(name)) return *s;
  if (const auto r = kvq::kv::registry::global().lookup(name)) {
    std::string why = "is a user scheme without a kvq storage format";
    if (r->format)
      why = std::holds_alternative<kvq::kv::hp_format>(*r->format)
                ? "is a high-precision storage format, not a block scheme"
                : "stores zero points (KIVI), which the verifier does not read";
    throw std::invalid_argument("scheme '" + r->name + "' " + why + " (verifiable: " + verifiable_list() + ")");
  }
  throw std::invalid_argument("unknown scheme '" + name + "' (known: " + verifiable_list() + ")");
}

}  // namespace detail

/// Every name check() accepts: the element formats, then the registry's block schemes.
inline std::vector<verifiable_scheme> verifiable_schemes() {
  std::vector<verifiable_scheme> v;
  for (const auto& e : detail::entries()) v.push_back(e.info);
  return v;
}

/// What check() knows about `name` (canonical name or alias).
/// \throws std::invalid_argument for a name check() refuses, saying why and listing
///         the accepted ones.
inline const verifiable_scheme& find_verifiable(const std::string& name) { return detail::require_entry(name).info; }

namespace detail {

// The kernel's buffers read in the input's order (kvq/verify/kv_layout.hpp), owned here
// while check() runs.
struct adapted_buffers {
  verify_buffers b;
  verify_options o;
  std::vector<std::uint8_t> codes, scales;
};

// Rearranges the kernel's buffers when options.page is set or the KV layouts differ;
// false when nothing is to be done.
inline bool adapt_layouts(const scheme_entry& e, const verify_buffers& b, const verify_options& o,
                          adapted_buffers& a) {
  if (o.page == page_layout::none && o.input_layout == o.kernel_layout) return false;
  a.b = b;
  a.o = o;
  const std::vector<std::size_t>& sh = b.shape;
  const std::size_t n = element_count(sh);
  if (n > 0 && b.input == nullptr) throw std::invalid_argument(b.input_name + " is null");
  if (b.code_bytes > 0 && b.codes == nullptr) throw std::invalid_argument(b.codes_name + " is null");
  if (o.page != page_layout::none) {
    const std::string what = std::string("page layout ") + to_string(o.page);
    if (!e.info.block || e.info.element_bits != 4 || e.info.scales != scale_type::u8 || e.info.block_size != 16)
      throw std::invalid_argument(what + " holds NVFP4 (4-bit codes, one uint8 scale per 16 elements); scheme " +
                                  e.info.name + " is not such a scheme");
    if (b.scale_dtype != scale_type::none)
      throw std::invalid_argument(what + ": the pages hold the scales; pass the whole cache as codes and no scales");
    if (o.layout != scale_layout::row_major)
      throw std::invalid_argument(what + ": the scale layout is the page's own; the scale layout option does not apply");
    if (o.input_layout != kv_layout::nhd)
      throw std::invalid_argument(what + ": the input is [pages, page_size, heads, head_size] (nhd); the pages' "
                                  "order is the kernel layout");
    if (sh.size() != 4)
      throw std::invalid_argument(what + ": " + b.input_name + " has shape " + shape_text(sh) +
                                  "; expected [pages, page_size, heads, head_size]");
    vllm_nvfp4_geometry g;
    g.page_size = sh[1];
    g.heads = sh[2];
    g.head_size = sh[3];
    g.order = o.kernel_layout;
    const kv_side side = o.page == page_layout::vllm_nvfp4_k ? kv_side::k : kv_side::v;
    kv_side_buffers s = vllm_nvfp4_read_side(b.codes, b.code_bytes, sh[0], g, side);
    a.codes = std::move(s.codes);
    a.scales = std::move(s.scales);
    a.b.codes_name = std::string(side == kv_side::k ? "the K" : "the V") + " data of " + b.codes_name;
    a.b.scales_name = std::string(side == kv_side::k ? "the K" : "the V") + " scales of " + b.codes_name;
    a.b.scales = a.scales.data();
    a.b.scale_count = a.scales.size();
    a.b.scale_dtype = scale_type::u8;
  } else {
    if (sh.size() < 3)
      throw std::invalid_argument("the KV layouts differ (input " + std::string(to_string(o.input_layout)) +
                                  ", kernel " + to_string(o.kernel_layout) + "): " + b.input_name + " of shape " +
                                  shape_text(sh) + " needs three or more dimensions ([..., tokens, heads, dim] or "
                                  "[..., heads, tokens, dim])");
    const std::size_t d = sh.back(), ia = sh[sh.size() - 3], ib = sh[sh.size() - 2];
    const std::size_t outer = d == 0 || ia == 0 || ib == 0 ? 0 : n / (d * ia * ib);
    // The kernel's buffers are [outer][ib][ia][row]; the input's order is [outer][ia][ib][row].
    std::vector<std::uint8_t> c(b.codes, b.codes + b.code_bytes);
    std::size_t row = 0;
    bool known = true;
    if (b.code_bytes == n) {
      row = d;
    } else if (e.info.element_bits == 4 && b.code_bytes == kvq::block::packed_bytes(n, 4)) {
      if (d % 2 != 0)
        throw std::invalid_argument(b.codes_name + ": 4-bit codes packed two per byte with an odd last dimension (" +
                                    std::to_string(d) + ") cannot be reordered between KV layouts; pass one code "
                                    "per byte");
      row = d / 2;
    } else {
      known = false;  // the size check of the comparison names the problem
    }
    a.codes = known ? swap_token_head_axes(c, outer, ib, ia, row) : c;
    if (b.scale_dtype != scale_type::none) {
      if (b.scale_count > 0 && b.scales == nullptr) throw std::invalid_argument(b.scales_name + " is null");
      const std::size_t es = b.scale_dtype == scale_type::f32 ? sizeof(float) : 1;
      std::vector<std::uint8_t> sc(static_cast<const std::uint8_t*>(b.scales),
                                   static_cast<const std::uint8_t*>(b.scales) + b.scale_count * es);
      std::size_t count = b.scale_count;
      if (o.layout == scale_layout::swizzled128x4 && b.scale_dtype == scale_type::u8 && e.info.block_size > 0) {
        const std::size_t bs = e.info.block_size;
        if (d == 0 || d % bs != 0)
          throw std::invalid_argument("swizzled128x4 scales: rows of " + std::to_string(d) +
                                      " elements do not hold whole blocks of " + std::to_string(bs));
        sc = unswizzle_scales(sc, n / d, d / bs);
        count = sc.size();
        a.o.layout = scale_layout::row_major;
      }
      const std::size_t rows = outer * ia * ib;
      if (rows == 0 || count % rows != 0)
        throw std::invalid_argument(b.scales_name + " holds " + std::to_string(count) +
                                    " scales, not a whole number per (token, head) row of " + b.input_name +
                                    " (shape " + shape_text(sh) + ")");
      a.scales = swap_token_head_axes(sc, outer, ib, ia, count / rows * es);
      a.b.scales = a.scales.data();
      a.b.scale_count = count;
    }
  }
  a.b.codes = a.codes.data();
  a.b.code_bytes = a.codes.size();
  a.o.page = page_layout::none;
  a.o.input_layout = a.o.kernel_layout = kv_layout::nhd;
  return true;
}

}  // namespace detail

/// Quantizes the input with scheme `scheme_name` and compares kvq's codes and scales
/// with the kernel's, bit for bit; explains block-scheme mismatches when
/// options.explain. The one entry point the command line, the .npy path and Python
/// adapt.
/// \throws std::invalid_argument for an unknown scheme, buffers whose sizes or types do
///         not fit the scheme and input, null buffers, or options the scheme does not
///         take (rounding for a block scheme, a tensor value for an element format, a
///         swizzled layout without uint8 scales, differing KV layouts for an input of
///         fewer than three dimensions, a page layout for a scheme other than NVFP4 or
///         with separate scales); the message names the buffer.
inline verify_report check(const std::string& scheme_name, const verify_buffers& bufs,
                           const verify_options& opts = {}) {
  const detail::scheme_entry& e = detail::require_entry(scheme_name);
  detail::adapted_buffers a;
  const bool adapted = detail::adapt_layouts(e, bufs, opts, a);
  const verify_buffers& b = adapted ? a.b : bufs;
  const verify_options& o = adapted ? a.o : opts;
  detail::check_io io;
  io.b = &b;
  io.o = &o;
  io.n = detail::element_count(b.shape);
  if (io.n > 0 && b.input == nullptr) throw std::invalid_argument(b.input_name + " is null");
  if (b.code_bytes > 0 && b.codes == nullptr) throw std::invalid_argument(b.codes_name + " is null");
  io.x.resize(io.n);
  for (std::size_t i = 0; i < io.n; ++i)
    io.x[i] = b.input_dtype == input_type::f32    ? detail::f32_of(b)[i]
              : b.input_dtype == input_type::f16 ? kvq::block::fp16_input::load(detail::u16_of(b)[i])
                                                  : kvq::block::bf16_input::load(detail::u16_of(b)[i]);
  verify_report r = e.verify(io);
  if (!r.ok() && o.identify && !e.family.empty()) {
    // The other orders of the same format: does the kernel follow one of them exactly?
    verify_options quiet = o;
    quiet.explain = false;
    quiet.identify = false;
    quiet.max_listed = 0;
    detail::check_io other = io;
    other.o = &quiet;
    for (const detail::scheme_entry& c : detail::entries()) {
      if (c.family != e.family || c.info.name == e.info.name) continue;
      if (o.tensor_value && c.tensor != e.tensor) continue;  // a given tensor value means another thing there
      try {
        if (c.verify(other).ok()) r.matches.push_back(c.info.name);
      } catch (const std::invalid_argument&) {
        // the buffers do not fit that scheme: not its order
      }
    }
  }
  return r;
}

namespace detail {
inline const char* source_text(tensor_value_source s) {
  switch (s) {
    case tensor_value_source::given: return "given";
    case tensor_value_source::fixed: return "the scheme's fixed value";
    case tensor_value_source::computed: return "computed from the input";
    case tensor_value_source::none: break;
  }
  return "none";
}
}  // namespace detail

/// Everything `kvq verify` prints before its verdict: the scheme and shape, the tensor
/// value, both comparisons (first mismatches with positions, hashes) and the
/// explanation of block-scheme mismatches (as many rows of each kind as the
/// comparisons list: verify_options::max_listed).
inline void print_details(std::ostream& os, const verify_report& r) {
  const std::size_t max_listed = r.codes.max_listed;
  os << "scheme " << r.scheme;
  if (!r.block) os << " (rounding " << to_string(r.round) << ", overflow " << to_string(r.over) << ")";
  os << ", input shape " << detail::shape_text(r.shape) << "\n";
  if (r.has_tensor_value)
    os << "tensor value " << detail::num(r.tensor_value) << " (" << detail::source_text(r.tensor_source) << ")\n";
  print(os, r.codes, r.shape);
  if (r.has_scales) print(os, r.scales, r.scale_shape);
  if (r.has_explanation) print(os, r.explained, max_listed);
  for (const std::string& m : r.matches)
    os << "matches " << m << " exactly: the kernel follows that scheme's operation order (verify with --scheme " << m
       << ")\n";
}

/// print_details(), then the verdict line: "MATCH" or "MISMATCH".
inline void print(std::ostream& os, const verify_report& r) {
  print_details(os, r);
  os << (r.ok() ? "MATCH" : "MISMATCH") << "\n";
}

/// The text print() writes.
inline std::string to_string(const verify_report& r) {
  std::ostringstream os;
  print(os, r);
  return os.str();
}

/// One line: "OK" or "MISMATCH", then per buffer how many differ and the first
/// mismatch (index, position, input, both elements). What a test framework shows of a
/// failed assertion.
inline std::string summary_line(const verify_report& r) {
  std::ostringstream os;
  os << (r.ok() ? "OK" : "MISMATCH");
  auto part = [&](const char* what, const report& c, const std::vector<std::size_t>& sh) {
    os << "; " << what << " " << c.mismatches << " of " << c.elements << " differ";
    if (c.first.empty()) return;
    const mismatch& m = c.first.front();
    os << ", first [" << m.index << "]";
    const std::string pos = detail::multi_index(m.index, sh);
    if (!pos.empty()) os << " " << pos;
    if (m.has_input) os << " x=" << detail::num(m.input);
    os << " kvq " << detail::element(m.expected_bits, m.expected_value, c) << " got "
       << detail::element(m.actual_bits, m.actual_value, c);
  };
  part("codes", r.codes, r.shape);
  if (r.has_scales) part("scales", r.scales, r.scale_shape);
  if (r.has_explanation) {
    const explanation& e = r.explained;
    os << "; explained: " << e.scale_blocks << " scale, " << e.element_errors << " element, "
       << (e.nan_codes + e.nan_scales) << " nan";
  }
  for (const std::string& m : r.matches) os << "; matches " << m << " exactly";
  return os.str();
}

}  // namespace kvq::verify
