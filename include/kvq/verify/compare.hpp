/// \file
/// kvq/verify/compare.hpp — bit-for-bit comparison of two buffers with a mismatch report.
///
/// A report holds: the number of elements compared, the number that differ, the first
/// N mismatches (index, the input value if one was given, both elements' bits and both
/// decoded values) and the FNV-1a 64 content hash (kvq/verify/hash.hpp) of each buffer.
/// Elements are compared by their bits (kvq/verify/element.hpp): -0 differs from +0,
/// and two NaNs with different payloads differ.
///
/// The comparator is streaming: feed it batch after batch (indices continue), which is
/// how the generator -> subject -> reference pipeline (kvq/verify/pipeline.hpp) uses it.
/// Host only; the per-element pieces it uses are KVQ_HD.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <kvq/format/traits.hpp>
#include <kvq/verify/element.hpp>
#include <kvq/verify/hash.hpp>

namespace kvq::verify {

/// One element that differs between the reference and the subject.
struct mismatch {
  /// Flat element index.
  std::size_t index = 0;             // flat element index
  /// Whether an input value was provided (then `input` is meaningful).
  bool has_input = false;            // an input value was provided
  /// The value that was converted (when has_input).
  float input = 0.0f;                // the value that was converted (when has_input)
  /// The reference element's bits (code, scale byte, float bits), right-aligned.
  std::uint64_t expected_bits = 0;   // the reference element (code, scale byte, float bits)
  /// The subject's element bits.
  std::uint64_t actual_bits = 0;     // the subject's element
  /// The reference element decoded (when the report has a decoder).
  double expected_value = 0.0;       // decoded (when the report has a decoder)
  /// The subject's element decoded (when the report has a decoder).
  double actual_value = 0.0;
};

/// Result of a bit-for-bit comparison of two buffers.
struct report {
  /// What was compared, e.g. "codes (e4m3)".
  std::string name;                  // what was compared, e.g. "codes (e4m3)"
  /// Bits per element, the printing width: 4, 8, 16, 32 or 64 (or the packed width).
  int element_bits = 8;              // bits per element (printing width): 4, 8, 16, 32, 64
  /// Whether the decoded values of the mismatches are meaningful.
  bool has_values = false;           // decoded values are meaningful
  /// Number of elements compared.
  std::size_t elements = 0;          // elements compared
  /// Number of elements that differ.
  std::size_t mismatches = 0;        // elements that differ
  /// Capacity of `first`.
  std::size_t max_listed = 10;       // capacity of `first`
  /// The first max_listed mismatches, by increasing index.
  std::vector<mismatch> first;       // the first max_listed mismatches, by index
  /// FNV-1a 64 of the reference buffer (kvq/verify/hash.hpp).
  std::uint64_t expected_hash = fnv1a64_offset;  // FNV-1a 64 of the reference buffer
  /// FNV-1a 64 of the subject's buffer.
  std::uint64_t actual_hash = fnv1a64_offset;    // FNV-1a 64 of the subject's buffer
  /// True if no element differs.
  bool ok() const { return mismatches == 0; }
};

/// Streaming comparison of elements of type T (uint8_t codes, uint16_t, float, double).
/// Decoder turns an element into a double for the report (no_decoder, code_decoder,
/// float_decoder, bf16_decoder, fp16_decoder).
template <class T, class Decoder = no_decoder>
class comparator {
 public:
  /// A comparator named `name` that lists at most max_listed mismatches.
  explicit comparator(std::string name, std::size_t max_listed = 10, Decoder dec = {}) : dec_(dec) {
    r_.name = std::move(name);
    r_.element_bits = static_cast<int>(8 * sizeof(T));
    r_.has_values = Decoder::has_value;
    r_.max_listed = max_listed;
  }

  /// Compare n more elements; `input` (may be null) holds the values they came from.
  void add(const T* expected, const T* actual, std::size_t n, const float* input = nullptr) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint64_t eb = raw_bits(expected[i]);
      const std::uint64_t ab = raw_bits(actual[i]);
      he_.value_le(eb, static_cast<int>(sizeof(T)));
      ha_.value_le(ab, static_cast<int>(sizeof(T)));
      if (eb != ab) record(r_.elements + i, eb, ab, dec_(expected[i]), dec_(actual[i]), input ? &input[i] : nullptr);
    }
    r_.elements += n;
  }

  /// Compare n more codes of `bits` bits each, packed (kvq/verify/element.hpp
  /// unpack_code). The hashes cover the packed bytes; n must be a multiple of 8/bits
  /// except in the last call. (T must be std::uint8_t.)
  void add_packed(const std::uint8_t* expected, const std::uint8_t* actual, std::size_t n, int bits,
                  const float* input = nullptr) {
    static_assert(sizeof(T) == 1, "packed codes are bytes");
    r_.element_bits = bits;
    const std::size_t per = static_cast<std::size_t>(8 / bits);
    const std::size_t nbytes = (n + per - 1) / per;
    he_.bytes(expected, nbytes);
    ha_.bytes(actual, nbytes);
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint8_t e = unpack_code(expected, i, bits);
      const std::uint8_t a = unpack_code(actual, i, bits);
      if (e != a) record(r_.elements + i, e, a, dec_(e), dec_(a), input ? &input[i] : nullptr);
    }
    r_.elements += n;
  }

  /// The report of everything added so far, with both hashes.
  report result() const {
    report r = r_;
    r.expected_hash = he_.value();
    r.actual_hash = ha_.value();
    return r;
  }

 private:
  void record(std::size_t index, std::uint64_t eb, std::uint64_t ab, double ev, double av, const float* in) {
    ++r_.mismatches;
    if (r_.first.size() >= r_.max_listed) return;
    mismatch m;
    m.index = index;
    m.expected_bits = eb;
    m.actual_bits = ab;
    m.expected_value = ev;
    m.actual_value = av;
    if (in) {
      m.has_input = true;
      m.input = *in;
    }
    r_.first.push_back(m);
  }

  Decoder dec_;
  report r_;
  fnv1a64 he_, ha_;
};

/// One-shot comparisons.
/// Compares n elements of two buffers; `input` (may be null) holds the values they came
/// from. Equivalent to one comparator::add().
template <class T, class Decoder = no_decoder>
report compare(const T* expected, const T* actual, std::size_t n, std::string name = "buffer", Decoder dec = {},
               const float* input = nullptr, std::size_t max_listed = 10) {
  comparator<T, Decoder> c(std::move(name), max_listed, dec);
  c.add(expected, actual, n, input);
  return c.result();
}

/// Codes of format F, one per byte (right-aligned).
/// Compares n codes of format F; decoded values use F; the report is named
/// "codes (\<format\>)".
template <class F>
report compare_codes(const std::uint8_t* expected, const std::uint8_t* actual, std::size_t n,
                     const float* input = nullptr, std::size_t max_listed = 10) {
  return compare(expected, actual, n, std::string("codes (") + format_name<F>() + ")", code_decoder<F>{}, input,
                 max_listed);
}

/// n codes of format F packed `bits` per code (4: two per byte, low nibble first).
/// The report is named "codes (\<format\>, packed)"; see comparator::add_packed().
template <class F>
report compare_packed_codes(const std::uint8_t* expected, const std::uint8_t* actual, std::size_t n, int bits,
                            const float* input = nullptr, std::size_t max_listed = 10) {
  comparator<std::uint8_t, code_decoder<F>> c(std::string("codes (") + format_name<F>() + ", packed)", max_listed);
  c.add_packed(expected, actual, n, bits, input);
  return c.result();
}

// ---- printing ------------------------------------------------------------------------

namespace detail {
inline std::string hex_bits(std::uint64_t v, int bits) {
  const int digits = bits <= 4 ? 1 : (bits + 3) / 4;
  char b[32];
  std::snprintf(b, sizeof b, "0x%0*llX", digits, static_cast<unsigned long long>(v));
  return b;
}
inline std::string num(double v) {
  if (std::isnan(v)) return std::signbit(v) ? "-nan" : "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  char b[40];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}
// Row-major multi-index of a flat index, e.g. "(3, 17)".
inline std::string multi_index(std::size_t flat, const std::vector<std::size_t>& shape) {
  if (shape.size() <= 1) return "";
  std::vector<std::size_t> idx(shape.size());
  for (std::size_t d = shape.size(); d-- > 0;) {
    const std::size_t s = shape[d] == 0 ? 1 : shape[d];
    idx[d] = flat % s;
    flat /= s;
  }
  std::string out = "(";
  for (std::size_t d = 0; d < idx.size(); ++d) out += (d ? ", " : "") + std::to_string(idx[d]);
  return out + ")";
}
inline std::string element(std::uint64_t bits, double value, const report& r) {
  std::string s = hex_bits(bits, r.element_bits);
  if (r.has_values) s += " = " + num(value);
  return s;
}
}  // namespace detail

/// Prints the report: a summary line, the listed mismatches as an aligned table (with
/// the row-major position when a shape with two or more dimensions is given) and the
/// two hashes.
inline void print(std::ostream& os, const report& r, const std::vector<std::size_t>& shape = {}) {
  os << r.name << ": " << r.mismatches << " of " << r.elements << " elements differ\n";
  if (!r.first.empty()) {
    const bool with_pos = shape.size() > 1;
    const bool with_input = r.first.front().has_input;
    std::vector<std::vector<std::string>> rows;
    std::vector<std::string> head{"index"};
    if (with_pos) head.push_back("position");
    if (with_input) head.push_back("input (bits)");
    head.push_back("expected");
    head.push_back("actual");
    rows.push_back(head);
    for (const mismatch& m : r.first) {
      std::vector<std::string> row{std::to_string(m.index)};
      if (with_pos) row.push_back(detail::multi_index(m.index, shape));
      if (with_input)
        row.push_back(m.has_input ? detail::num(m.input) + " (" + detail::hex_bits(raw_bits(m.input), 32) + ")" : "-");
      row.push_back(detail::element(m.expected_bits, m.expected_value, r));
      row.push_back(detail::element(m.actual_bits, m.actual_value, r));
      rows.push_back(row);
    }
    std::vector<std::size_t> width(head.size(), 0);
    for (const auto& row : rows)
      for (std::size_t c = 0; c < row.size(); ++c) width[c] = row[c].size() > width[c] ? row[c].size() : width[c];
    for (const auto& row : rows) {
      std::string line;
      for (std::size_t c = 0; c < row.size(); ++c) {
        line += "  " + row[c];
        if (c + 1 < row.size()) line.append(width[c] - row[c].size(), ' ');
      }
      os << line << "\n";
    }
    if (r.mismatches > r.first.size()) os << "  ... " << (r.mismatches - r.first.size()) << " more\n";
  }
  os << "  fnv1a64 expected " << detail::hex_bits(r.expected_hash, 64) << ", actual "
     << detail::hex_bits(r.actual_hash, 64) << "\n";
}

/// The text print() writes.
inline std::string to_string(const report& r, const std::vector<std::size_t>& shape = {}) {
  std::ostringstream s;
  print(s, r, shape);
  return s.str();
}

}  // namespace kvq::verify
