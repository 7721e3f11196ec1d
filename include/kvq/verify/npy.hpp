/// \file
/// kvq/verify/npy.hpp — reader and writer of NumPy .npy files: the one place kvq parses
/// untrusted files (kernel dumps handed in by users), so the reader is strict and
/// bounded.
///
/// Supported: little-endian C-order arrays of
///   '<f4' float32, '<f2' float16, '<u2' uint16 (the bits of bfloat16 — .npy has no
///   bfloat16 type; the caller decides the meaning), '|u1' uint8 (also spelled '<u1'),
/// format versions 1.0, 2.0 and 3.0 (NumPy's "NEP 1" format description:
/// numpy/lib/format.py). The reader checks, and rejects with std::invalid_argument
/// naming the problem:
///   - the magic string "\x93NUMPY" and the version;
///   - the header length (at most max_header_bytes = 64 KiB, and within the file);
///   - the header dictionary: exactly the keys 'descr', 'fortran_order', 'shape', each
///     once, with a supported descr, fortran_order False, and a shape that is a tuple of
///     at most max_dims non-negative decimal integers (Python literal syntax, e.g. (),
///     (5,), (2, 3)); only printable ASCII and whitespace, no escapes;
///   - the shape arithmetic (element count and byte count) without overflow;
///   - the data length: exactly count * itemsize bytes after the header, nothing more.
/// Allocation is bounded by the input size (the data buffer is allocated only after
/// the length has been checked against the bytes actually present).
///
/// The writer produces version 1.0 (2.0 if the header would not fit), the header
/// padded with spaces and a final '\\n' to a multiple of 64 bytes as NumPy does, into a
/// temporary file in the same directory that is synced and then renamed over the
/// destination (kvq/core/atomic_file.hpp), so a reader never sees a half-written file.
/// Data are little-endian in the file and in memory: kvq assumes a little-endian host
/// (x86-64, AArch64); read() and write() refuse to run on a big-endian one.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <kvq/core/atomic_file.hpp>
#include <kvq/verify/element.hpp>

/// Strict, bounded reader and atomic writer of NumPy .npy files (kernel dumps).
/// Errors are std::invalid_argument (format) or std::runtime_error (I/O), with messages
/// starting "npy: ".
namespace kvq::verify::npy {

/// Element type of a supported array: `f32` ('<f4' float32), `f16` ('<f2' binary16),
/// `u16` ('<u2' uint16, e.g. bfloat16 bits), `u8` ('|u1' uint8, e.g. packed codes).
enum class dtype : unsigned char { f32, f16, u16, u8 };

/// Largest header (the dictionary and its padding, after the length field) the reader
/// accepts, in bytes.
inline constexpr std::size_t max_header_bytes = 65536;
/// Largest number of dimensions of a shape the reader and writer accept.
inline constexpr std::size_t max_dims = 64;

/// Bytes per element of `t` (4, 2, 2 or 1).
constexpr std::size_t itemsize(dtype t) noexcept {
  return t == dtype::f32 ? 4 : (t == dtype::u8 ? 1 : 2);
}
/// The .npy 'descr' string of `t`: "<f4", "<f2", "<u2" or "|u1".
constexpr const char* descr(dtype t) noexcept {
  return t == dtype::f32 ? "<f4" : t == dtype::f16 ? "<f2" : t == dtype::u16 ? "<u2" : "|u1";
}
/// NumPy's name of `t` for messages: "float32", "float16", "uint16" or "uint8".
constexpr const char* name(dtype t) noexcept {
  return t == dtype::f32 ? "float32" : t == dtype::f16 ? "float16" : t == dtype::u16 ? "uint16" : "uint8";
}

/// An array as stored in a .npy file: element type, C-order shape and the raw
/// little-endian element bytes.
struct array {
  dtype type = dtype::f32;         ///< element type
  std::vector<std::size_t> shape;  ///< C-order dimensions; empty = a scalar (one element)
  std::vector<std::uint8_t> data;  ///< count() * itemsize(type) bytes, little-endian

  /// Number of elements: the product of the shape (1 for a scalar).
  std::size_t count() const {
    std::size_t n = 1;
    for (std::size_t d : shape) n *= d;  // validated not to overflow when parsed/made
    return n;
  }
  /// Values as float: f32 as is, f16 converted exactly (fp16_to_float), u16 read as
  /// bfloat16 bits (bf16_to_float, exact).
  /// \throws std::invalid_argument for a uint8 array (codes are not values).
  std::vector<float> to_float() const;
  /// The raw elements of a uint8 array.
  /// \throws std::invalid_argument if the type is not dtype::u8.
  std::vector<std::uint8_t> as_u8() const;
  /// The raw 16-bit elements of a uint16 or float16 array (bits, not converted).
  /// \throws std::invalid_argument if the type is neither dtype::u16 nor dtype::f16.
  std::vector<std::uint16_t> as_u16() const;
};

/// A shape in Python tuple syntax as NumPy writes it: "()", "(5,)", "(2, 3)".
std::string shape_string(const std::vector<std::size_t>& shape);

/// A parsed .npy header.
struct header {
  /// Major format version: 1, 2 or 3 (2 and 3 have a 4-byte header length).
  int major = 1, minor = 0;
  /// \var minor
  /// Minor format version (always 0).
  dtype type = dtype::f32;          ///< element type (from 'descr')
  std::vector<std::size_t> shape;   ///< C-order dimensions (from 'shape')
  std::size_t data_offset = 0;      ///< bytes before the data (magic, version, length, header)
  std::size_t data_bytes = 0;       ///< bytes of data the shape and type require
};

namespace detail {

[[noreturn]] inline void fail(const std::string& what) { throw std::invalid_argument("npy: " + what); }

inline bool host_is_little_endian() {
  const std::uint16_t one = 1;
  std::uint8_t b;
  std::memcpy(&b, &one, 1);
  return b == 1;
}

inline bool checked_mul(std::size_t a, std::size_t b, std::size_t* out) {
  if (a != 0 && b > static_cast<std::size_t>(-1) / a) return false;
  *out = a * b;
  return true;
}

// Element count and byte count of a shape, or an error naming the shape.
inline std::size_t checked_bytes(const std::vector<std::size_t>& shape, dtype t) {
  std::size_t n = 1;
  for (std::size_t d : shape)
    if (!checked_mul(n, d, &n)) fail("shape " + shape_string(shape) + " overflows the element count");
  std::size_t bytes = 0;
  if (!checked_mul(n, itemsize(t), &bytes)) fail("shape " + shape_string(shape) + " overflows the byte count");
  return bytes;
}

// Recursive-descent parser of the header dictionary (a Python literal).
class dict_parser {
 public:
  dict_parser(const char* p, std::size_t n) : p_(p), n_(n) {}

  header parse() {
    header h;
    bool have_descr = false, have_order = false, have_shape = false;
    ws();
    expect('{', "the header does not start with '{'");
    ws();
    while (!at('}')) {
      const std::string key = string_literal("a key");
      ws();
      expect(':', "missing ':' after key '" + key + "'");
      ws();
      if (key == "descr") {
        if (have_descr) fail("duplicate key 'descr' in the header");
        have_descr = true;
        if (at('[')) fail("structured dtypes (a list descr) are not supported");
        h.type = parse_descr(string_literal("the descr value"));
      } else if (key == "fortran_order") {
        if (have_order) fail("duplicate key 'fortran_order' in the header");
        have_order = true;
        if (word("False")) {
        } else if (word("True")) {
          fail("fortran_order True (column-major) is not supported; save a C-order array "
               "(numpy.ascontiguousarray)");
        } else {
          fail("fortran_order must be True or False");
        }
      } else if (key == "shape") {
        if (have_shape) fail("duplicate key 'shape' in the header");
        have_shape = true;
        h.shape = parse_shape();
      } else {
        fail("unexpected key '" + key + "' in the header (expected descr, fortran_order, shape)");
      }
      ws();
      if (at(',')) {
        ++i_;
        ws();
      } else if (!at('}')) {
        fail("expected ',' or '}' in the header");
      }
    }
    ++i_;  // '}'
    ws();
    if (i_ != n_) fail("unexpected characters after the header dictionary");
    if (!have_descr) fail("the header has no 'descr'");
    if (!have_order) fail("the header has no 'fortran_order'");
    if (!have_shape) fail("the header has no 'shape'");
    return h;
  }

 private:
  bool at(char c) const { return i_ < n_ && p_[i_] == c; }
  void expect(char c, const std::string& msg) {
    if (!at(c)) fail(msg);
    ++i_;
  }
  void ws() {
    while (i_ < n_ && (p_[i_] == ' ' || p_[i_] == '\t' || p_[i_] == '\n' || p_[i_] == '\r')) ++i_;
  }
  bool word(const char* w) {
    const std::size_t len = std::strlen(w);
    if (n_ - i_ < len || std::memcmp(p_ + i_, w, len) != 0) return false;
    // the word must end here (no "Falsey")
    if (n_ - i_ > len) {
      const char c = p_[i_ + len];
      if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') return false;
    }
    i_ += len;
    return true;
  }
  std::string string_literal(const char* what) {
    if (!(at('\'') || at('"'))) fail(std::string("expected a quoted string as ") + what);
    const char q = p_[i_++];
    std::string s;
    while (i_ < n_ && p_[i_] != q) {
      const char c = p_[i_];
      if (c == '\\') fail("escape sequences in header strings are not supported");
      if (c < 0x20 || c > 0x7E) fail("non-printable or non-ASCII byte in a header string");
      if (s.size() >= 64) fail("header string longer than 64 characters");
      s += c;
      ++i_;
    }
    if (i_ >= n_) fail("unterminated string in the header");
    ++i_;
    return s;
  }
  std::size_t integer() {
    if (!(i_ < n_ && p_[i_] >= '0' && p_[i_] <= '9')) fail("expected a non-negative integer in the shape");
    if (p_[i_] == '0' && i_ + 1 < n_ && p_[i_ + 1] >= '0' && p_[i_ + 1] <= '9')
      fail("leading zeros in a shape dimension");
    std::size_t v = 0;
    while (i_ < n_ && p_[i_] >= '0' && p_[i_] <= '9') {
      const std::size_t d = static_cast<std::size_t>(p_[i_] - '0');
      if (v > (static_cast<std::size_t>(-1) - d) / 10) fail("shape dimension does not fit in 64 bits");
      v = v * 10 + d;
      ++i_;
    }
    return v;
  }
  std::vector<std::size_t> parse_shape() {
    std::vector<std::size_t> shape;
    expect('(', "shape must be a tuple, e.g. (2, 3) or (5,)");
    ws();
    bool trailing_comma = false;
    while (!at(')')) {
      if (shape.size() >= max_dims) fail("shape has more than " + std::to_string(max_dims) + " dimensions");
      shape.push_back(integer());
      ws();
      trailing_comma = false;
      if (at(',')) {
        ++i_;
        ws();
        trailing_comma = true;
      } else if (!at(')')) {
        fail("expected ',' or ')' in the shape");
      }
    }
    ++i_;  // ')'
    if (shape.size() == 1 && !trailing_comma) fail("shape (n) is not a tuple; a 1-d shape is written (n,)");
    return shape;
  }
  static dtype parse_descr(const std::string& d) {
    if (d == "<f4") return dtype::f32;
    if (d == "<f2") return dtype::f16;
    if (d == "<u2") return dtype::u16;
    if (d == "|u1" || d == "<u1") return dtype::u8;
    if (d == "|i1" || d == "<i1")  // a torch.int8 / np.int8 buffer of codes or scale bytes
      fail("dtype '" + d + "' (signed int8) is not supported: codes and scales are unsigned bytes; pass "
           ".view(torch.uint8) (PyTorch) or .view(np.uint8) (NumPy) before saving");
    if (!d.empty() && (d[0] == '>' || d[0] == '=' || d[0] == '!'))
      fail("dtype '" + d + "': only little-endian ('<') data is supported");
    fail("dtype '" + d + "' is not supported (supported: <f4, <f2, <u2 for bfloat16 bits, |u1)");
  }

  const char* p_;
  std::size_t n_;
  std::size_t i_ = 0;
};

}  // namespace detail

inline std::string shape_string(const std::vector<std::size_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  if (shape.size() == 1) s += ",";
  return s + ")";
}

/// Parses and checks the header of a .npy image. Needs the first data_offset bytes
/// only; `size` is what is available (the whole file for parse()).
/// \param p    the image's first bytes
/// \param size number of bytes readable at `p`
/// \throws std::invalid_argument for a bad magic string or version, a header length
///         over max_header_bytes or past `size`, a non-printable byte, a bad
///         dictionary, or a shape whose element or byte count overflows
inline header parse_header(const std::uint8_t* p, std::size_t size) {
  static const std::uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 8 || std::memcmp(p, magic, 6) != 0) detail::fail("not a .npy file (bad magic string)");
  header h;
  h.major = p[6];
  h.minor = p[7];
  if (!((h.major == 1 || h.major == 2 || h.major == 3) && h.minor == 0))
    detail::fail("unsupported .npy format version " + std::to_string(h.major) + "." + std::to_string(h.minor) +
                 " (supported: 1.0, 2.0, 3.0)");
  std::size_t prefix = 0, hlen = 0;
  if (h.major == 1) {
    if (size < 10) detail::fail("file ends inside the header length");
    prefix = 10;
    hlen = static_cast<std::size_t>(p[8]) | (static_cast<std::size_t>(p[9]) << 8);
  } else {
    if (size < 12) detail::fail("file ends inside the header length");
    prefix = 12;
    hlen = static_cast<std::size_t>(p[8]) | (static_cast<std::size_t>(p[9]) << 8) |
           (static_cast<std::size_t>(p[10]) << 16) | (static_cast<std::size_t>(p[11]) << 24);
  }
  if (hlen > max_header_bytes)
    detail::fail("header length " + std::to_string(hlen) + " exceeds the limit of " +
                 std::to_string(max_header_bytes) + " bytes");
  if (size - prefix < hlen)
    detail::fail("file ends inside the header (" + std::to_string(size) + " bytes, header needs " +
                 std::to_string(prefix + hlen) + ")");
  for (std::size_t i = 0; i < hlen; ++i) {
    const std::uint8_t c = p[prefix + i];
    if (c == 0 || c > 0x7E || (c < 0x20 && c != '\n' && c != '\r' && c != '\t'))
      detail::fail("header contains a byte that is not printable ASCII (offset " + std::to_string(prefix + i) + ")");
  }
  detail::dict_parser dp(reinterpret_cast<const char*>(p + prefix), hlen);
  header d = dp.parse();
  h.type = d.type;
  h.shape = std::move(d.shape);
  h.data_offset = prefix + hlen;
  h.data_bytes = detail::checked_bytes(h.shape, h.type);
  return h;
}

/// Parses a whole .npy image held in memory (header checks as parse_header).
/// \throws std::invalid_argument also if `p` is null with a nonzero `size`, or if the
///         bytes after the header are not exactly header::data_bytes
inline array parse(const std::uint8_t* p, std::size_t size) {
  if (p == nullptr && size != 0) detail::fail("null input");
  const header h = parse_header(p, size);
  const std::size_t have = size - h.data_offset;
  if (have != h.data_bytes)
    detail::fail("data length " + std::to_string(have) + " bytes does not match shape " + shape_string(h.shape) +
                 " of " + name(h.type) + " (" + std::to_string(h.data_bytes) + " bytes)");
  array a;
  a.type = h.type;
  a.shape = h.shape;
  a.data.assign(p + h.data_offset, p + size);
  return a;
}

/// The .npy image of an array (version 1.0, or 2.0 if the header exceeds 65535 bytes),
/// the header padded with spaces and '\\n' so the data start at a multiple of 64 bytes.
/// \throws std::invalid_argument if a.data does not hold exactly count() * itemsize
///         bytes, the byte count overflows, or the shape has more than max_dims dimensions
inline std::vector<std::uint8_t> serialize(const array& a) {
  const std::size_t bytes = detail::checked_bytes(a.shape, a.type);
  if (a.data.size() != bytes)
    detail::fail("array data holds " + std::to_string(a.data.size()) + " bytes, shape " + shape_string(a.shape) +
                 " of " + name(a.type) + " needs " + std::to_string(bytes));
  if (a.shape.size() > max_dims) detail::fail("shape has more than " + std::to_string(max_dims) + " dimensions");
  std::string dict = std::string("{'descr': '") + descr(a.type) + "', 'fortran_order': False, 'shape': " +
                     shape_string(a.shape) + ", }";
  const bool v2 = dict.size() + 1 + 10 + 63 > 65535;
  const std::size_t prefix = v2 ? 12 : 10;
  std::size_t total = prefix + dict.size() + 1;  // + '\n'
  const std::size_t pad = (64 - total % 64) % 64;
  dict.append(pad, ' ');
  dict += '\n';
  const std::size_t hlen = dict.size();
  std::vector<std::uint8_t> out(prefix + hlen + bytes);
  const std::uint8_t magic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  std::memcpy(out.data(), magic, 6);
  out[6] = v2 ? 2 : 1;
  out[7] = 0;
  for (std::size_t i = 0; i < (v2 ? 4u : 2u); ++i) out[8 + i] = static_cast<std::uint8_t>(hlen >> (8 * i));
  std::memcpy(out.data() + prefix, dict.data(), hlen);
  if (bytes) std::memcpy(out.data() + prefix + hlen, a.data.data(), bytes);
  return out;
}

/// Reads a .npy file. The header is read first (bounded by max_header_bytes) and the
/// data buffer allocated only once its length matches the file size.
/// \throws std::invalid_argument for format problems, naming the problem and the file
/// \throws std::runtime_error for I/O failures and on a big-endian host
inline array read(const std::string& path) {
  if (!detail::host_is_little_endian()) throw std::runtime_error("npy: big-endian hosts are not supported");
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw std::runtime_error("npy: cannot open '" + path + "': " + std::strerror(errno));
  struct closer {
    std::FILE* f;
    ~closer() { std::fclose(f); }
  } guard{f};
  if (std::fseek(f, 0, SEEK_END) != 0) throw std::runtime_error("npy: cannot seek in '" + path + "'");
  const long end = std::ftell(f);
  if (end < 0) throw std::runtime_error("npy: cannot determine the size of '" + path + "'");
  std::rewind(f);
  const std::size_t size = static_cast<std::size_t>(end);
  try {
    // The header first (bounded by max_header_bytes), the data only once its length
    // is known to match the file size.
    std::vector<std::uint8_t> buf(size < 12 ? size : 12);
    if (std::fread(buf.data(), 1, buf.size(), f) != buf.size())
      throw std::runtime_error("npy: read error on '" + path + "'");
    std::size_t want = buf.size();
    if (buf.size() >= 10 && buf[0] == 0x93) {
      const bool v1 = buf[6] == 1;
      const std::size_t prefix = v1 ? 10 : 12;
      if (buf.size() >= prefix) {
        std::size_t hlen = static_cast<std::size_t>(buf[8]) | (static_cast<std::size_t>(buf[9]) << 8);
        if (!v1) hlen |= (static_cast<std::size_t>(buf[10]) << 16) | (static_cast<std::size_t>(buf[11]) << 24);
        if (hlen <= max_header_bytes) want = hlen <= size - prefix ? prefix + hlen : size;  // bounded
      }
    }
    if (want > buf.size()) {
      const std::size_t had = buf.size();
      buf.resize(want);
      if (std::fread(buf.data() + had, 1, want - had, f) != want - had)
        throw std::runtime_error("npy: read error on '" + path + "'");
    }
    const header h = parse_header(buf.data(), buf.size());
    if (size - h.data_offset != h.data_bytes)
      detail::fail("data length " + std::to_string(size - h.data_offset) + " bytes does not match shape " +
                   shape_string(h.shape) + " of " + name(h.type) + " (" + std::to_string(h.data_bytes) + " bytes)");
    array a;
    a.type = h.type;
    a.shape = h.shape;
    a.data.resize(h.data_bytes);
    if (std::fseek(f, static_cast<long>(h.data_offset), SEEK_SET) != 0 ||
        std::fread(a.data.data(), 1, h.data_bytes, f) != h.data_bytes)
      throw std::runtime_error("npy: read error on '" + path + "'");
    return a;
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string(e.what()) + " (file '" + path + "')");
  }
}

/// Writes a .npy file atomically with kvq::atomic_file: serialize() into an exclusively
/// created temporary file in the same directory, synced and renamed over `path` (a
/// character device or FIFO is written directly); on failure the temporary file is
/// removed.
/// \throws std::invalid_argument as serialize(), and for a target kvq refuses (a symbolic
///         link, a directory)
/// \throws std::runtime_error if the file cannot be created, written or renamed, and
///         on a big-endian host
inline void write(const std::string& path, const array& a) {
  if (!detail::host_is_little_endian()) throw std::runtime_error("npy: big-endian hosts are not supported");
  const std::vector<std::uint8_t> img = serialize(a);
  try {
    kvq::write_file_atomic(path, std::string_view(reinterpret_cast<const char*>(img.data()), img.size()));
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(std::string("npy: ") + e.what());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(std::string("npy: ") + e.what());
  }
}

// ---- building arrays -------------------------------------------------------------------

namespace detail {
template <class T>
array make(dtype t, std::vector<std::size_t> shape, const T* v, std::size_t n) {
  array a;
  a.type = t;
  a.shape = std::move(shape);
  const std::size_t bytes = checked_bytes(a.shape, t);
  if (bytes != n * sizeof(T))
    fail("shape " + shape_string(a.shape) + " of " + name(t) + " needs " + std::to_string(bytes / sizeof(T)) +
         " elements, " + std::to_string(n) + " given");
  a.data.resize(bytes);
  if (bytes) std::memcpy(a.data.data(), v, bytes);
  return a;
}
}  // namespace detail

/// A float32 array of the given shape holding `v`.
/// \throws std::invalid_argument if v.size() differs from the shape's element count.
inline array from_floats(std::vector<std::size_t> shape, const std::vector<float>& v) {
  return detail::make(dtype::f32, std::move(shape), v.data(), v.size());
}
/// A uint8 array of the given shape holding `v` (e.g. packed codes).
/// \throws std::invalid_argument if v.size() differs from the shape's element count.
inline array from_u8(std::vector<std::size_t> shape, const std::vector<std::uint8_t>& v) {
  return detail::make(dtype::u8, std::move(shape), v.data(), v.size());
}
/// An array of 16-bit elements: dtype::u16 (e.g. bfloat16 bits) or dtype::f16
/// (binary16 bits).
/// \throws std::invalid_argument if `t` is another type or v.size() differs from the
///         shape's element count.
inline array from_u16(std::vector<std::size_t> shape, const std::vector<std::uint16_t>& v, dtype t = dtype::u16) {
  if (t != dtype::u16 && t != dtype::f16) detail::fail("from_u16: dtype must be uint16 or float16");
  return detail::make(t, std::move(shape), v.data(), v.size());
}

inline std::vector<float> array::to_float() const {
  const std::size_t n = data.size() / itemsize(type);
  std::vector<float> out(n);
  if (type == dtype::f32) {
    if (n) std::memcpy(out.data(), data.data(), n * 4);
  } else if (type == dtype::f16 || type == dtype::u16) {
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint16_t b = static_cast<std::uint16_t>(data[2 * i] | (data[2 * i + 1] << 8));
      out[i] = type == dtype::f16 ? fp16_to_float(b) : bf16_to_float(b);
    }
  } else {
    detail::fail("a uint8 array holds codes, not values; cannot convert it to float");
  }
  return out;
}

inline std::vector<std::uint8_t> array::as_u8() const {
  if (type != dtype::u8) detail::fail(std::string("expected a uint8 array, got ") + name(type));
  return data;
}

inline std::vector<std::uint16_t> array::as_u16() const {
  if (type != dtype::u16 && type != dtype::f16) detail::fail(std::string("expected a 16-bit array, got ") + name(type));
  std::vector<std::uint16_t> out(data.size() / 2);
  for (std::size_t i = 0; i < out.size(); ++i)
    out[i] = static_cast<std::uint16_t>(data[2 * i] | (data[2 * i + 1] << 8));
  return out;
}

}  // namespace kvq::verify::npy
