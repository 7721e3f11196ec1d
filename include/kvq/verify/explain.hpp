/// \file
/// kvq/verify/explain.hpp — why a kernel's block-scaled codes differ from kvq's: for
/// every mismatching element the block it belongs to, what the recipe computed on the
/// way (block amax, the fp32 scale before its cast, the scaled element before its
/// cast) and both sides' scales, codes and values; and a class per mismatch:
///
///   scale    the block's stored scale differs. Its code mismatches are consequences of
///            the wrong scale and are counted under that scale mismatch, not as element
///            errors (fix the scale first). Example: a kernel computing
///            bamax / 6 * S_enc instead of TransformerEngine's bamax * (S_enc * (1/6))
///            (core_nvfp4.cuh) rounds an exact e4m3 tie the other way.
///   element  the block's scale is the same but the code differs: a genuine element
///            rounding error (ties away instead of to even, a wrong nibble order, ...).
///   nan      both sides decode to NaN and only the bits (payload, sign) differ.
///
/// Host-only. The recipe's own quantize_block computes the reference, with a
/// kvq::block::block_trace recording its intermediate values (the same bits as
/// kvq::block::quantize). From C++:
///
///   const auto e = kvq::verify::explain<kvq::block::nvfp4_te>({}, x, n, row_len,
///                      kvq::block::tensor_value::computed(), kernel_codes, kernel_scales);
///   kvq::verify::print(std::cout, e);                 // summary by class, first rows
///   kvq::verify::write_mismatch_csv("mismatches.csv", e);
///
/// kernel_codes holds one code per element (unpack 4-bit codes first, low nibble =
/// even element, kvq/block/api.hpp's packing); kernel_scales one scale per block,
/// row-major (un-swizzle first: kvq/verify/scale_layout.hpp).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <kvq/block.hpp>
#include <kvq/core/atomic_file.hpp>
#include <kvq/core/bits.hpp>
#include <kvq/format.hpp>

namespace kvq::verify {

/// Class of a mismatch (see the file description): `scale` (the block's stored scale
/// differs), `element` (same scale, different code), `nan` (both decode to NaN, only the
/// bits differ).
enum class mismatch_class : unsigned char { scale, element, nan };

/// "scale", "element" or "nan".
inline const char* to_string(mismatch_class c) noexcept {
  return c == mismatch_class::scale ? "scale" : c == mismatch_class::element ? "element" : "nan";
}

/// One mismatching element. Scale codes are the stored bits (uint8 codes, or the fp32
/// bit pattern of float scales); scale values are decoded.
struct element_mismatch {
  /// Flat element index.
  std::size_t index = 0;                         // flat element index
  /// \var block
  /// Flat block index.
  /// \var block_row
  /// Row of the block (index / row_len).
  /// \var block_col
  /// Block within its row.
  std::size_t block = 0, block_row = 0, block_col = 0;  // block, and its row / block within the row
  /// Class of the mismatch.
  mismatch_class cls = mismatch_class::element;
  /// The element as the recipe loaded it.
  float input = 0.0f;            // x as the recipe loaded it
  /// kvq's block amax.
  float block_amax = 0.0f;       // kvq's
  /// kvq's fp32 scale before the scale-format cast.
  float unrounded_scale = 0.0f;  // kvq's fp32 scale before the scale-format cast
  /// \var want_scale_code
  /// kvq's stored scale bits.
  /// \var got_scale_code
  /// The kernel's stored scale bits (kvq's when the scheme has no block scales).
  std::uint32_t want_scale_code = 0, got_scale_code = 0;
  /// \var want_scale
  /// kvq's scale, decoded (the unrounded scale when the scheme has no block scales).
  /// \var got_scale
  /// The kernel's scale, decoded.
  float want_scale = 0.0f, got_scale = 0.0f;  // decoded: kvq's, the kernel's
  /// kvq's element before its cast (x times the inverse scale).
  float scaled = 0.0f;           // kvq's element before its cast (x * inverse scale)
  /// \var want_code
  /// kvq's code.
  /// \var got_code
  /// The kernel's code.
  std::uint32_t want_code = 0, got_code = 0;
  /// \var want_value
  /// kvq's code decoded.
  /// \var got_value
  /// The kernel's code decoded (NaN when it has bits outside the format's width).
  float want_value = 0.0f, got_value = 0.0f;  // decoded element codes
};

/// One block whose scale differs.
struct scale_mismatch {
  /// \var block
  /// Flat block index.
  /// \var block_row
  /// Row of the block.
  /// \var block_col
  /// Block within its row.
  std::size_t block = 0, block_row = 0, block_col = 0;
  /// Both scales decode to NaN (counted under explanation::nan_scales).
  bool nan_only = false;  // both scales decode to NaN
  /// \var block_amax
  /// kvq's block amax.
  /// \var unrounded_scale
  /// kvq's fp32 scale before the scale-format cast.
  float block_amax = 0.0f, unrounded_scale = 0.0f;
  /// \var want_scale_code
  /// kvq's stored scale bits.
  /// \var got_scale_code
  /// The kernel's stored scale bits.
  std::uint32_t want_scale_code = 0, got_scale_code = 0;
  /// \var want_scale
  /// kvq's scale, decoded.
  /// \var got_scale
  /// The kernel's scale, decoded.
  float want_scale = 0.0f, got_scale = 0.0f;
  /// Number of code mismatches in this block (its consequences, class scale).
  std::size_t code_mismatches = 0;  // its consequent code mismatches
};

/// Everything explain() found, with a summary by class.
struct explanation {
  /// Scheme name (S::name).
  std::string scheme;
  /// \var elements
  /// Number of elements compared.
  /// \var blocks
  /// Number of blocks.
  /// \var block_size
  /// Elements per block.
  /// \var blocks_per_row
  /// Blocks per row (row_len / block_size).
  std::size_t elements = 0, blocks = 0, block_size = 0, blocks_per_row = 0;
  /// \var has_scales
  /// The scheme stores block scales.
  /// \var float_scales
  /// The block scales are fp32 (scale codes are then fp32 bit patterns).
  bool has_scales = false, float_scales = false;
  /// Bits per stored element code.
  int element_bits = 8;
  /// Every mismatching element, by index.
  std::vector<element_mismatch> elements_listed;  // every mismatching element, by index
  /// Every block whose scale differs.
  std::vector<scale_mismatch> scales_listed;      // every block whose scale differs
  // Summary by class.
  /// Blocks whose scale differs, not counting the NaN-only ones (those are nan_scales).
  std::size_t scale_blocks = 0;       // blocks whose scale differs (NaN-only ones under nan_scales)
  /// Code mismatches in those blocks (class scale).
  std::size_t scale_consequences = 0; // code mismatches in those blocks (class scale)
  /// Code mismatches of class element.
  std::size_t element_errors = 0;     // class element
  /// Code mismatches of class nan.
  std::size_t nan_codes = 0;          // class nan (codes)
  /// Blocks whose scales differ only in NaN bits.
  std::size_t nan_scales = 0;         // scales differing only in NaN bits
  /// True if no element and no scale differs.
  bool ok() const { return elements_listed.empty() && scales_listed.empty(); }
};

namespace detail {

inline bool nan_f(float v) noexcept { return v != v; }

template <class S>
float decode_scale(typename S::scale_type s) noexcept {
  if constexpr (std::is_same<typename S::scale_type, float>::value) {
    return s;
  } else if constexpr (S::scale_bytes == 0) {
    return static_cast<float>(s) * 0.0f;  // no block scales (fp8 per-tensor): unused
  } else {
    return kvq::decode<typename S::scale_format, float>(s);
  }
}

template <class T>
std::uint32_t scale_bits(T s) noexcept {
  if constexpr (std::is_same<T, float>::value) {
    return kvq::bit_cast<std::uint32_t>(s);
  } else {
    return static_cast<std::uint32_t>(s);
  }
}

}  // namespace detail

/// Explains the differences between kvq's quantization of x (n elements, rows of
/// row_len elements; 0: one row) under scheme s and a kernel's codes (one per element)
/// and scales (one per block, row-major; ignored for schemes without block scales).
/// Throws std::invalid_argument on bad sizes.
template <class S, class In = kvq::block::f32_input>
explanation explain(const S& s, const typename In::storage* x, std::size_t n, std::size_t row_len,
                    kvq::block::tensor_value tv, const std::uint8_t* got_codes,
                    const typename S::scale_type* got_scales) {
  namespace b = kvq::block;
  using E = typename S::element_format;
  const std::size_t bs = s.block_size();
  if (bs == 0 || n % bs != 0)
    throw std::invalid_argument("explain(" + std::string(S::name) + "): " + std::to_string(n) +
                                " elements are not a whole number of blocks of " + std::to_string(bs));
  if (row_len == 0) row_len = n;
  if (row_len % bs != 0 || (n > 0 && n % row_len != 0))
    throw std::invalid_argument("explain(" + std::string(S::name) + "): rows of " + std::to_string(row_len) +
                                " elements do not hold whole blocks of " + std::to_string(bs));
  if (n > 0 && (x == nullptr || got_codes == nullptr))
    throw std::invalid_argument("explain(" + std::string(S::name) + "): input or codes is null");
  if (S::scale_bytes > 0 && n > 0 && got_scales == nullptr)
    throw std::invalid_argument("explain(" + std::string(S::name) + "): the scheme has block scales; scales is null");

  explanation e;
  e.scheme = S::name;
  e.elements = n;
  e.block_size = bs;
  e.blocks = n / bs;
  e.blocks_per_row = row_len / bs;
  e.has_scales = S::scale_bytes > 0;
  e.float_scales = std::is_same<typename S::scale_type, float>::value;
  e.element_bits = S::storage_bits;

  // The tensor stage exactly as kvq::block::quantize runs it (kvq/block/api.hpp).
  float t = 1.0f;
  if (S::tensor != b::tensor_kind::none)
    t = tv.from_data ? S::tensor_value_from_amax(b::tensor_amax<In>(x, n, S::tensor_amax_rule)) : tv.value;
  const typename S::params p = S::prepare(t);

  std::vector<float> scaled(bs);
  std::vector<std::uint8_t> packed(b::packed_bytes(bs, S::storage_bits));
  for (std::size_t blk = 0; blk < e.blocks; ++blk) {
    b::block_trace tr;
    tr.scaled = scaled.data();
    typename S::scale_type want_scale{};
    float zero = 0.0f;
    s.template quantize_block<In>(x + blk * bs, p, packed.data(), &want_scale, &zero, &tr);
    const std::size_t row = blk / e.blocks_per_row, col = blk % e.blocks_per_row;

    bool scale_differs = false;
    scale_mismatch sm;
    if constexpr (S::scale_bytes > 0) {
      const typename S::scale_type got = got_scales[blk];
      if (detail::scale_bits(want_scale) != detail::scale_bits(got)) {
        scale_differs = true;
        sm.block = blk;
        sm.block_row = row;
        sm.block_col = col;
        sm.block_amax = tr.amax;
        sm.unrounded_scale = tr.unrounded_scale;
        sm.want_scale_code = detail::scale_bits(want_scale);
        sm.got_scale_code = detail::scale_bits(got);
        sm.want_scale = detail::decode_scale<S>(want_scale);
        sm.got_scale = detail::decode_scale<S>(got);
        sm.nan_only = detail::nan_f(sm.want_scale) && detail::nan_f(sm.got_scale);
      }
    }
    for (std::size_t i = 0; i < bs; ++i) {
      const std::size_t k = blk * bs + i;
      const std::uint8_t want = b::get_code(packed.data(), i, S::storage_bits);
      const std::uint8_t got = got_codes[k];
      if (want == got) continue;
      element_mismatch m;
      m.index = k;
      m.block = blk;
      m.block_row = row;
      m.block_col = col;
      m.input = In::load(x[k]);
      m.block_amax = tr.amax;
      m.unrounded_scale = tr.unrounded_scale;
      m.want_scale_code = detail::scale_bits(want_scale);
      m.want_scale = S::scale_bytes > 0 ? detail::decode_scale<S>(want_scale) : tr.unrounded_scale;
      m.got_scale_code = m.want_scale_code;
      m.got_scale = m.want_scale;
      if constexpr (S::scale_bytes > 0) {
        m.got_scale_code = detail::scale_bits(got_scales[blk]);
        m.got_scale = detail::decode_scale<S>(got_scales[blk]);
      }
      m.scaled = scaled[i];
      m.want_code = want;
      m.got_code = got;
      const std::uint8_t mask = S::storage_bits == 4 ? 0x0F : 0xFF;
      m.want_value = kvq::decode<E, float>(want);
      m.got_value = (got & ~mask) ? kvq::bit_cast<float>(0x7FC00000u)  // not a code of the format
                                  : kvq::decode<E, float>(static_cast<std::uint8_t>(got & mask));
      if (scale_differs && !sm.nan_only) {
        m.cls = mismatch_class::scale;
        ++sm.code_mismatches;
        ++e.scale_consequences;
      } else if (detail::nan_f(m.want_value) && detail::nan_f(m.got_value) && !(got & ~mask)) {
        m.cls = mismatch_class::nan;
        ++e.nan_codes;
      } else {
        m.cls = mismatch_class::element;
        ++e.element_errors;
      }
      e.elements_listed.push_back(m);
    }
    if (scale_differs) {
      if (sm.nan_only) ++e.nan_scales;
      else ++e.scale_blocks;
      e.scales_listed.push_back(sm);
    }
  }
  return e;
}

namespace detail {

inline std::string g9(float v) {
  if (v != v) return "nan";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}
inline std::string hex(std::uint32_t v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%0*X", digits, v);
  return buf;
}

}  // namespace detail

/// The CSV header of write_mismatch_csv.
inline const char* mismatch_csv_header() noexcept {
  return "index,block,block_row,block_col,class,input,block_amax,unrounded_scale,kvq_scale_code,kernel_scale_code,"
         "kvq_scale,kernel_scale,scaled,kvq_code,kernel_code,kvq_value,kernel_value";
}

/// One CSV row of write_mismatch_csv (no newline): the columns of
/// mismatch_csv_header(), floats with 9 significant digits, codes in hex.
inline std::string mismatch_csv_row(const explanation& e, const element_mismatch& m) {
  const int sd = e.float_scales ? 8 : 2;
  const int cd = e.element_bits == 4 ? 1 : 2;
  std::ostringstream f;
  f << m.index << ',' << m.block << ',' << m.block_row << ',' << m.block_col << ',' << to_string(m.cls) << ','
    << detail::g9(m.input) << ',' << detail::g9(m.block_amax) << ',' << detail::g9(m.unrounded_scale) << ','
    << detail::hex(m.want_scale_code, sd) << ',' << detail::hex(m.got_scale_code, sd) << ','
    << detail::g9(m.want_scale) << ',' << detail::g9(m.got_scale) << ',' << detail::g9(m.scaled) << ','
    << detail::hex(m.want_code, cd) << ',' << detail::hex(m.got_code, cd) << ',' << detail::g9(m.want_value) << ','
    << detail::g9(m.got_value);
  return f.str();
}

/// One mismatching element as print() lists it: the columns of mismatch_csv_header() as
/// name=value pairs separated by spaces, each value the text of mismatch_csv_row().
inline std::string mismatch_fields(const explanation& e, const element_mismatch& m) {
  const std::string header = mismatch_csv_header(), row = mismatch_csv_row(e, m);
  std::string out;
  std::size_t h = 0, r = 0;
  while (h <= header.size() && r <= row.size()) {
    const std::size_t hc = std::min(header.find(',', h), header.size()), rc = std::min(row.find(',', r), row.size());
    if (!out.empty()) out += ' ';
    out += header.substr(h, hc - h) + "=" + row.substr(r, rc - r);
    h = hc + 1;
    r = rc + 1;
  }
  return out;
}

/// The text write_mismatch_csv writes: the header, then one row per mismatching element.
inline std::string mismatch_csv(const explanation& e) {
  std::string out = std::string(mismatch_csv_header()) + "\n";
  for (const element_mismatch& m : e.elements_listed) out += mismatch_csv_row(e, m) + "\n";
  return out;
}

/// Writes mismatch_csv(e) to `path` atomically with kvq::atomic_file: the rows go to an
/// exclusively created temporary file next to `path`, synced and renamed over `path` only
/// once complete, so a reader never sees a half-written file; a character device or FIFO
/// (`/dev/null`, a pipe) is written directly and never replaced.
/// \throws std::invalid_argument for a target kvq refuses (a symbolic link, a directory)
/// \throws std::runtime_error naming `path` if it cannot be written
inline void write_mismatch_csv(const std::string& path, const explanation& e) {
  kvq::write_file_atomic(path, mismatch_csv(e));
}

/// Summary by class, then up to max_listed scale mismatches (one line per block) and up
/// to max_listed mismatching elements of every class, each with the columns of the
/// mismatch CSV (mismatch_fields).
inline void print(std::ostream& os, const explanation& e, std::size_t max_listed = 10) {
  os << "explanation (" << e.scheme << ", blocks of " << e.block_size << ", " << e.blocks_per_row
     << " blocks per row): " << e.scale_blocks << " scale mismatches with " << e.scale_consequences
     << " consequent code mismatches (class scale), " << e.element_errors << " element errors (class element), "
     << e.nan_codes << " NaN-only code differences and " << e.nan_scales << " NaN-only scale differences (class nan)\n";
  std::size_t k = 0;
  for (const scale_mismatch& s : e.scales_listed) {
    if (k++ == max_listed) break;
    os << "  block " << s.block << " (row " << s.block_row << ", block " << s.block_col << "): amax "
       << detail::g9(s.block_amax) << ", unrounded scale " << detail::g9(s.unrounded_scale) << ", kvq scale "
       << detail::g9(s.want_scale) << ", kernel " << detail::g9(s.got_scale) << " -> " << s.code_mismatches
       << " codes differ\n";
  }
  k = 0;
  for (const element_mismatch& m : e.elements_listed) {
    if (k++ == max_listed) {
      os << "  ... " << e.elements_listed.size() - max_listed
         << " more mismatching elements (the mismatch CSV lists every one)\n";
      break;
    }
    os << "  element " << mismatch_fields(e, m) << "\n";
  }
}

}  // namespace kvq::verify
