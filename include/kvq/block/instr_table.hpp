/// \file
/// kvq/block/instr_table.hpp — the compact table format for an approximate GPU
/// instruction: per-index corrections to a reference result, and its file format.
///
/// An approximate instruction (rcp.approx.ftz.f32, ex2.approx.ftz.f32,
/// ex2.approx.f16x2) is reduced to a table over a small index domain: for
/// rcp/ex2 f32, the 2^23 mantissas (fractions) of one binade; for ex2 f16, all 2^16
/// inputs (kvq/block/instr_models.hpp says how an input maps to an index). Entry i is
/// the *correction* of the hardware result against the model's reference result
/// (the correctly rounded one, see instr_models.hpp), as a difference of bit patterns:
/// for results of one sign and the same binade that is the error in ulps. Captured
/// corrections are almost always in {-1, 0, +1}, so each entry is a 2-bit code
/// ~~~
///     0 -> 0,  1 -> +1,  2 -> -1,  3 -> "look in the exception list"
/// ~~~
/// and the rare other values are an exception list of (index, correction) pairs sorted
/// by index. 2^23 entries take 2 MiB.
///
/// File format (version 1, little-endian; every field is checked by parse()):
/// ~~~
///     offset 0   8 bytes  magic "KVQINSTR"
///            8   u32      version = 1
///           12   u32      L = byte length of the metadata block (<= 4096)
///           16   L bytes  metadata: lines "key=value\n"; keys [a-z0-9_]+, values
///                         printable ASCII; required keys: instruction, arch
///                         (others written by the capture program: model, gpu,
///                         driver, cuda_*, date, base, domain, checked, mismatches;
///                         for ex2.approx.ftz.f32 fixed_point = rn | rz | rd, the
///                         model variant, see instr_models.hpp)
///       16 + L   u32      count: entries (1 .. 2^24)
///       20 + L   u32      E: exceptions (<= count)
///       24 + L   ceil(count/4) bytes of 2-bit codes, entry i at bits 2*(i%4) of
///                         byte i/4; unused bits of the last byte are 0
///            .   E x (u32 index, i32 correction), indices strictly increasing,
///                         corrections outside {-1, 0, +1}; exactly the entries of
///                         code 3
///            .   u64      FNV-1a 64 of every byte before it
/// ~~~
/// A reader of outside files must never have undefined behaviour: parse() rejects
/// every malformed image with std::invalid_argument naming the problem
/// (tests/fuzz/fuzz_instr_table.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <kvq/config.hpp>

namespace kvq {
namespace instr {

/// One entry of the exception list.
struct table_exception {
  /// Entry index (< count).
  std::uint32_t index;
  /// Its correction, outside {-1, 0, +1}.
  std::int32_t correction;
};

/// A non-owning view of a table, usable in KVQ_HD code (host or device memory).
struct table_view {
  /// 2-bit codes, ceil(count / 4) bytes, entry i at bits 2 * (i % 4) of byte i / 4.
  const std::uint8_t* codes = nullptr;          // ceil(count/4) bytes
  /// n_exceptions entries, sorted by index.
  const table_exception* exceptions = nullptr;  // n_exceptions entries, sorted by index
  /// Number of entries.
  std::uint32_t count = 0;
  /// Number of exceptions.
  std::uint32_t n_exceptions = 0;
  /// Model variant recorded with the table (ex2.approx.ftz.f32: the fixed-point
  /// rounding, metadata "fixed_point" = rn (0) | rz (1) | rd (2)); 0 by default.
  std::uint32_t variant = 0;

  /// The correction of entry i (i < count): bit-pattern difference hardware - reference.
  KVQ_HD std::int32_t correction(std::uint32_t i) const noexcept {
    const unsigned code = (codes[i >> 2] >> (2u * (i & 3u))) & 3u;
    if (code == 0) return 0;
    if (code == 1) return 1;
    if (code == 2) return -1;
    std::uint32_t lo = 0, hi = n_exceptions;  // binary search: exceptions are sorted
    while (lo < hi) {
      const std::uint32_t mid = lo + (hi - lo) / 2;
      if (exceptions[mid].index < i) lo = mid + 1;
      else hi = mid;
    }
    return lo < n_exceptions && exceptions[lo].index == i ? exceptions[lo].correction : 0;
  }
};

/// Magic bytes at offset 0 of a table file, "KVQINSTR".
inline constexpr char table_magic[8] = {'K', 'V', 'Q', 'I', 'N', 'S', 'T', 'R'};
/// File format version written and accepted.
inline constexpr std::uint32_t table_version = 1;
/// Largest accepted metadata block, in bytes.
inline constexpr std::uint32_t table_max_meta = 4096;
/// Largest accepted entry count, 2^24.
inline constexpr std::uint32_t table_max_count = 1u << 24;

/// An owning table: metadata, packed codes and exceptions.
struct instr_table {
  /// Metadata key/value pairs, in file order.
  std::vector<std::pair<std::string, std::string>> meta;  // in file order
  /// Number of entries.
  std::uint32_t count = 0;
  /// Packed 2-bit codes (layout of table_view::codes).
  std::vector<std::uint8_t> codes;
  /// Exception list, sorted by index.
  std::vector<table_exception> exceptions;

  /// A view of this table (valid while it lives); the variant comes from the "fixed_point"
  /// metadata key (rz 1, rd 2, else 0).
  table_view view() const {
    const std::string fp = get("fixed_point");
    const std::uint32_t variant = fp == "rz" ? 1u : fp == "rd" ? 2u : 0u;
    return {codes.data(), exceptions.data(), count, static_cast<std::uint32_t>(exceptions.size()), variant};
  }
  /// The correction of entry i (i < count).
  std::int32_t correction(std::uint32_t i) const noexcept { return view().correction(i); }
  /// The value of a metadata key, "" if absent.
  std::string get(const std::string& key) const {
    for (const auto& kv : meta)
      if (kv.first == key) return kv.second;
    return {};
  }
  /// Sets a metadata key (replaces its value, or appends the pair).
  void set(const std::string& key, const std::string& value) {
    for (auto& kv : meta)
      if (kv.first == key) {
        kv.second = value;
        return;
      }
    meta.emplace_back(key, value);
  }
};

namespace detail {
[[noreturn]] inline void table_fail(const std::string& what) {
  throw std::invalid_argument("kvq::instr table: " + what);
}
inline bool meta_key_ok(const std::string& k) {
  if (k.empty() || k.size() > 64) return false;
  for (char c : k)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}
inline bool meta_value_ok(const std::string& v) {
  for (char c : v)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}
inline std::uint64_t fnv1a64(const std::uint8_t* p, std::size_t n) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ULL;
  }
  return h;
}
inline void put_u32(std::vector<std::uint8_t>& o, std::uint32_t v) {
  for (int b = 0; b < 4; ++b) o.push_back(static_cast<std::uint8_t>(v >> (8 * b)));
}
inline std::uint32_t get_u32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
         static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}
inline std::uint64_t get_u64(const std::uint8_t* p) {
  return static_cast<std::uint64_t>(get_u32(p)) | static_cast<std::uint64_t>(get_u32(p + 4)) << 32;
}
inline std::size_t code_bytes(std::uint32_t count) { return (static_cast<std::size_t>(count) + 3) / 4; }
}  // namespace detail

/// Builds a table from per-entry corrections (count entries).
inline instr_table make_table(const std::int32_t* corrections, std::uint32_t count,
                              std::vector<std::pair<std::string, std::string>> meta) {
  if (count == 0 || count > table_max_count) detail::table_fail("count " + std::to_string(count) + " out of range");
  instr_table t;
  t.meta = std::move(meta);
  t.count = count;
  t.codes.assign(detail::code_bytes(count), 0);
  for (std::uint32_t i = 0; i < count; ++i) {
    const std::int32_t c = corrections[i];
    unsigned code = 3;
    if (c == 0) code = 0;
    else if (c == 1) code = 1;
    else if (c == -1) code = 2;
    else t.exceptions.push_back({i, c});
    t.codes[i >> 2] = static_cast<std::uint8_t>(t.codes[i >> 2] | code << (2u * (i & 3u)));
  }
  return t;
}

/// The file image of a table (format above). Throws if the metadata is not writable.
inline std::vector<std::uint8_t> serialize(const instr_table& t) {
  std::string meta;
  for (const auto& kv : t.meta) {
    if (!detail::meta_key_ok(kv.first)) detail::table_fail("metadata key '" + kv.first + "' is not [a-z0-9_]{1,64}");
    if (!detail::meta_value_ok(kv.second)) detail::table_fail("metadata value of '" + kv.first + "' is not printable ASCII");
    meta += kv.first + "=" + kv.second + "\n";
  }
  if (meta.size() > table_max_meta) detail::table_fail("metadata longer than 4096 bytes");
  if (t.codes.size() != detail::code_bytes(t.count)) detail::table_fail("code array does not match count");
  std::vector<std::uint8_t> o(table_magic, table_magic + 8);
  detail::put_u32(o, table_version);
  detail::put_u32(o, static_cast<std::uint32_t>(meta.size()));
  o.insert(o.end(), meta.begin(), meta.end());
  detail::put_u32(o, t.count);
  detail::put_u32(o, static_cast<std::uint32_t>(t.exceptions.size()));
  o.insert(o.end(), t.codes.begin(), t.codes.end());
  for (const auto& e : t.exceptions) {
    detail::put_u32(o, e.index);
    detail::put_u32(o, static_cast<std::uint32_t>(e.correction));
  }
  const std::uint64_t h = detail::fnv1a64(o.data(), o.size());
  detail::put_u32(o, static_cast<std::uint32_t>(h));
  detail::put_u32(o, static_cast<std::uint32_t>(h >> 32));
  return o;
}

/// Parses a file image; every malformed image throws std::invalid_argument.
inline instr_table parse(const std::uint8_t* p, std::size_t n) {
  using detail::table_fail;
  if (p == nullptr && n != 0) table_fail("null data");
  if (n < 16) table_fail("file too short for the header (" + std::to_string(n) + " bytes)");
  for (int i = 0; i < 8; ++i)
    if (p[i] != static_cast<std::uint8_t>(table_magic[i])) table_fail("bad magic (not a kvq instruction table)");
  const std::uint32_t version = detail::get_u32(p + 8);
  if (version != table_version) table_fail("unsupported version " + std::to_string(version));
  const std::uint32_t L = detail::get_u32(p + 12);
  if (L > table_max_meta) table_fail("metadata length " + std::to_string(L) + " exceeds 4096");
  if (n < 16 + static_cast<std::size_t>(L) + 8) table_fail("file truncated in the metadata or counts");
  instr_table t;
  {
    const std::string meta(reinterpret_cast<const char*>(p + 16), L);
    std::size_t pos = 0;
    while (pos < meta.size()) {
      const std::size_t nl = meta.find('\n', pos);
      if (nl == std::string::npos) table_fail("metadata does not end with a newline");
      const std::string line = meta.substr(pos, nl - pos);
      const std::size_t eq = line.find('=');
      if (eq == std::string::npos) table_fail("metadata line without '='");
      std::string k = line.substr(0, eq), v = line.substr(eq + 1);
      if (!detail::meta_key_ok(k)) table_fail("bad metadata key");
      if (!detail::meta_value_ok(v)) table_fail("metadata value of '" + k + "' is not printable ASCII");
      for (const auto& kv : t.meta)
        if (kv.first == k) table_fail("duplicate metadata key '" + k + "'");
      t.meta.emplace_back(std::move(k), std::move(v));
      pos = nl + 1;
    }
  }
  if (t.get("instruction").empty()) table_fail("metadata lacks 'instruction'");
  if (t.get("arch").empty()) table_fail("metadata lacks 'arch'");
  {
    const std::string fp = t.get("fixed_point");
    if (!fp.empty() && fp != "rn" && fp != "rz" && fp != "rd") table_fail("fixed_point must be rn, rz or rd");
  }
  const std::uint8_t* q = p + 16 + L;
  const std::uint32_t count = detail::get_u32(q), ne = detail::get_u32(q + 4);
  if (count == 0 || count > table_max_count) table_fail("count " + std::to_string(count) + " out of range 1..2^24");
  if (ne > count) table_fail("more exceptions than entries");
  const std::size_t cb = detail::code_bytes(count);
  const std::size_t expect = 16 + static_cast<std::size_t>(L) + 8 + cb + static_cast<std::size_t>(ne) * 8 + 8;
  if (n != expect)
    table_fail("file size " + std::to_string(n) + " bytes, expected " + std::to_string(expect) + " for its counts");
  if (detail::fnv1a64(p, n - 8) != detail::get_u64(p + n - 8)) table_fail("checksum mismatch (file corrupted)");
  t.count = count;
  t.codes.assign(q + 8, q + 8 + cb);
  if (count % 4 != 0 && (t.codes.back() >> (2u * (count % 4))) != 0) table_fail("nonzero padding bits in the codes");
  std::uint32_t n3 = 0;
  for (std::uint32_t i = 0; i < count; ++i) n3 += ((t.codes[i >> 2] >> (2u * (i & 3u))) & 3u) == 3u;
  if (n3 != ne) table_fail("exception list does not match the entries of code 3");
  const std::uint8_t* e = q + 8 + cb;
  t.exceptions.resize(ne);
  for (std::uint32_t j = 0; j < ne; ++j) {
    const std::uint32_t idx = detail::get_u32(e + 8 * j);
    const std::int32_t c = static_cast<std::int32_t>(detail::get_u32(e + 8 * j + 4));
    if (idx >= count) table_fail("exception index out of range");
    if (j > 0 && idx <= t.exceptions[j - 1].index) table_fail("exception indices not strictly increasing");
    if (((t.codes[idx >> 2] >> (2u * (idx & 3u))) & 3u) != 3u) table_fail("exception at an entry whose code is not 3");
    if (c >= -1 && c <= 1) table_fail("exception correction in {-1, 0, +1} (must be a 2-bit code)");
    t.exceptions[j] = {idx, c};
  }
  return t;
}

/// parse() of a whole image. Throws std::invalid_argument for every malformed image.
inline instr_table parse(const std::vector<std::uint8_t>& img) { return parse(img.data(), img.size()); }

/// Reads and parses a table file. Throws std::invalid_argument if it cannot be opened or
/// is malformed.
inline instr_table read_table_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) detail::table_fail("cannot open '" + path + "'");
  const std::vector<std::uint8_t> img((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse(img);
}

/// Writes t as a table file. Throws std::invalid_argument if the metadata is not writable
/// or the file cannot be written.
inline void write_table_file(const std::string& path, const instr_table& t) {
  const std::vector<std::uint8_t> img = serialize(t);
  std::ofstream out(path, std::ios::binary);
  if (!out) detail::table_fail("cannot write '" + path + "'");
  out.write(reinterpret_cast<const char*>(img.data()), static_cast<std::streamsize>(img.size()));
  if (!out) detail::table_fail("write to '" + path + "' failed");
}

}  // namespace instr
}  // namespace kvq
