/// \file
/// kvq/study/safetensors.hpp — reader of .safetensors files (Hugging Face's tensor
/// container): an 8-byte little-endian header length N, N bytes of JSON header, then the
/// data. The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin,
/// end]} (offsets relative to the first data byte) and may hold "__metadata__", a map of
/// strings to strings. Format: the safetensors repository's README ("Format") and its
/// validation in safetensors/src/tensor.rs, whose rules this reader applies:
///   - N at most max_header_bytes (100 MB, as safetensors' own limit) and within the file;
///   - the header a JSON object (parsed by nlohmann-json, which also rejects invalid UTF-8),
///     starting with '{' (trailing spaces allowed);
///   - every dtype one of the names below, every shape a list of non-negative integers,
///     element and byte counts without overflow, end - begin = count * itemsize;
///   - the tensors, sorted by offset, tile the data exactly: the first begins at 0, each
///     begins where the previous one ends, the last ends at the end of the file.
/// Problems raise std::invalid_argument("safetensors: ..."), naming the tensor.
/// Lives in the study layer (not verify/) because it needs nlohmann-json, which only the
/// kvq::study target links.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvq/core/float16.hpp>
#include <kvq/study/byte_source.hpp>
#include <kvq/study/json.hpp>

namespace kvq::study::safetensors {

/// Largest accepted JSON header (safetensors' own limit).
inline constexpr std::size_t max_header_bytes = 100000000;
/// Largest accepted number of dimensions of a tensor.
inline constexpr std::size_t max_dims = 64;

/// One tensor's header entry.
struct tensor_info {
  std::string name;                ///< Tensor name, e.g. "layers.0.k".
  std::string dtype;               ///< safetensors dtype name: "F32", "BF16", ...
  std::size_t itemsize = 0;        ///< Bytes per element of dtype.
  std::vector<std::size_t> shape;  ///< Dimensions.
  std::size_t begin = 0;           ///< First byte, relative to the data start.
  std::size_t end = 0;             ///< One past the last byte, relative to the data start.
  /// Element count (checked not to overflow when parsed).
  std::size_t count() const {
    std::size_t n = 1;
    for (std::size_t d : shape) n *= d;  // checked when parsed
    return n;
  }
};

/// A parsed header.
struct header {
  std::vector<tensor_info> tensors;             ///< In file order (sorted by offset).
  std::map<std::string, std::string> metadata;  ///< "__metadata__", if any.
  std::size_t data_offset = 0;                  ///< 8 + N: the first data byte in the file.

  /// The tensor of that name, or null.
  const tensor_info* find(const std::string& name) const {
    for (const auto& t : tensors)
      if (t.name == name) return &t;
    return nullptr;
  }
};

namespace detail {
[[noreturn]] inline void fail(const std::string& what) { throw std::invalid_argument("safetensors: " + what); }

// Item sizes of safetensors' dtype names (safetensors/src/tensor.rs, enum Dtype).
inline std::size_t itemsize_of(const std::string& d) {
  static const std::pair<const char*, std::size_t> table[] = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"F8_E8M0", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},     {"U32", 4},
      {"F32", 4},  {"I64", 8}, {"U64", 8}, {"F64", 8}};
  for (const auto& e : table)
    if (d == e.first) return e.second;
  return 0;
}

inline std::string shape_text(const std::vector<std::size_t>& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}
}  // namespace detail

/// Parses the JSON header text (the N bytes after the length) of a file of file_size
/// bytes.
inline header parse_header_text(const std::uint8_t* p, std::size_t n, std::size_t file_size) {
  using detail::fail;
  if (n == 0 || p[0] != '{') fail("the header does not start with '{'");
  const nlohmann::json j = nlohmann::json::parse(p, p + n, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) fail("the header is not valid JSON");
  if (!j.is_object()) fail("the header is not a JSON object");
  header h;
  h.data_offset = 8 + n;
  const std::size_t data_bytes = file_size - h.data_offset;  // caller checked 8 + n <= file_size
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& key = it.key();
    const nlohmann::json& v = it.value();
    if (key == "__metadata__") {
      if (!v.is_object()) fail("__metadata__ is not an object of strings");
      for (auto m = v.begin(); m != v.end(); ++m) {
        if (!m.value().is_string()) fail("__metadata__ value of '" + m.key() + "' is not a string");
        h.metadata[m.key()] = m.value().get<std::string>();
      }
      continue;
    }
    if (!v.is_object()) fail("tensor '" + key + "': entry is not an object");
    tensor_info t;
    t.name = key;
    const auto d = v.find("dtype");
    const auto s = v.find("shape");
    const auto o = v.find("data_offsets");
    if (d == v.end() || !d->is_string()) fail("tensor '" + key + "': missing or non-string dtype");
    if (s == v.end() || !s->is_array()) fail("tensor '" + key + "': missing or non-list shape");
    if (o == v.end() || !o->is_array() || o->size() != 2) fail("tensor '" + key + "': data_offsets is not [begin, end]");
    if (v.size() != 3) fail("tensor '" + key + "': unexpected keys (expected dtype, shape, data_offsets)");
    t.dtype = d->get<std::string>();
    t.itemsize = detail::itemsize_of(t.dtype);
    if (t.itemsize == 0) fail("tensor '" + key + "': unknown dtype '" + t.dtype + "'");
    if (s->size() > max_dims) fail("tensor '" + key + "': more than " + std::to_string(max_dims) + " dimensions");
    std::size_t count = 1;
    for (const auto& e : *s) {
      if (!e.is_number_unsigned()) fail("tensor '" + key + "': shape entries must be non-negative integers");
      const std::uint64_t x = e.get<std::uint64_t>();
      if (x > static_cast<std::size_t>(-1)) fail("tensor '" + key + "': shape dimension does not fit");
      t.shape.push_back(static_cast<std::size_t>(x));
      if (!kvq::study::detail::checked_mul(count, static_cast<std::size_t>(x), &count))
        fail("tensor '" + key + "': shape " + detail::shape_text(t.shape) + " overflows the element count");
    }
    std::size_t bytes = 0;
    if (!kvq::study::detail::checked_mul(count, t.itemsize, &bytes))
      fail("tensor '" + key + "': shape " + detail::shape_text(t.shape) + " overflows the byte count");
    for (const auto& e : *o)
      if (!e.is_number_unsigned()) fail("tensor '" + key + "': data_offsets must be non-negative integers");
    const std::uint64_t b = (*o)[0].get<std::uint64_t>(), en = (*o)[1].get<std::uint64_t>();
    if (b > en) fail("tensor '" + key + "': data_offsets begin " + std::to_string(b) + " > end " + std::to_string(en));
    if (en > data_bytes)
      fail("tensor '" + key + "': data_offsets end " + std::to_string(en) + " lies beyond the data (" +
           std::to_string(data_bytes) + " bytes)");
    t.begin = static_cast<std::size_t>(b);
    t.end = static_cast<std::size_t>(en);
    if (t.end - t.begin != bytes)
      fail("tensor '" + key + "': data_offsets span " + std::to_string(t.end - t.begin) + " bytes, shape " +
           detail::shape_text(t.shape) + " of " + t.dtype + " needs " + std::to_string(bytes));
    h.tensors.push_back(std::move(t));
  }
  std::stable_sort(h.tensors.begin(), h.tensors.end(), [](const tensor_info& a, const tensor_info& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::size_t at = 0;
  for (const auto& t : h.tensors) {
    if (t.begin != at)
      fail("tensor '" + t.name + "' begins at data byte " + std::to_string(t.begin) + ", expected " +
           std::to_string(at) + " (tensors must tile the data without gaps or overlaps)");
    at = t.end;
  }
  if (at != data_bytes)
    fail("the tensors cover " + std::to_string(at) + " data bytes, the file holds " + std::to_string(data_bytes));
  return h;
}

/// Reads and parses the header of a source.
inline header read_header(const byte_source& src) {
  using detail::fail;
  if (src.size() < 8) fail("file ends inside the 8-byte header length (" + std::to_string(src.size()) + " bytes)");
  std::uint8_t len[8];
  src.read(0, 8, len, "safetensors header length");
  const std::uint64_t n = kvq::study::detail::load_le(len, 8);
  if (n > max_header_bytes)
    fail("header length " + std::to_string(n) + " exceeds the limit of " + std::to_string(max_header_bytes) + " bytes");
  if (n > src.size() - 8)
    fail("header length " + std::to_string(n) + " exceeds the file (" + std::to_string(src.size()) + " bytes)");
  const std::vector<std::uint8_t> text = src.read(8, static_cast<std::size_t>(n), "safetensors header");
  return parse_header_text(text.data(), text.size(), src.size());
}

/// Whether values of this dtype convert exactly to float.
inline bool is_float_dtype(const std::string& d) { return d == "F32" || d == "F16" || d == "BF16"; }

/// Elements [first, first + n) of a F32/F16/BF16 tensor as float (F16 and BF16 widen
/// exactly). Throws for other dtypes and for a range outside the tensor. safetensors
/// data are little-endian; like npy.hpp, kvq assumes a little-endian host.
inline std::vector<float> read_floats(const byte_source& src, const header& h, const tensor_info& t, std::size_t first,
                                      std::size_t n) {
  using detail::fail;
  if (!is_float_dtype(t.dtype))
    fail("tensor '" + t.name + "' has dtype " + t.dtype + " (supported: F32, F16, BF16)");
  std::size_t last = 0;
  if (!kvq::study::detail::checked_add(first, n, &last) || last > t.count())
    fail("tensor '" + t.name + "': elements " + std::to_string(first) + " + " + std::to_string(n) + " out of range");
  const std::size_t off = h.data_offset + t.begin + first * t.itemsize;  // all within the file: checked above
  const std::vector<std::uint8_t> raw = src.read(off, n * t.itemsize, "safetensors tensor '" + t.name + "'");
  std::vector<float> out(n);
  if (t.itemsize == 4) {
    if (n) std::memcpy(out.data(), raw.data(), n * 4);
  } else {
    const bool f16 = t.dtype == "F16";
    for (std::size_t i = 0; i < n; ++i) {
      const std::uint16_t b = static_cast<std::uint16_t>(raw[2 * i] | (raw[2 * i + 1] << 8));
      out[i] = f16 ? kvq::fp16_to_float(b) : kvq::bf16_to_float(b);
    }
  }
  return out;
}

}  // namespace kvq::study::safetensors
