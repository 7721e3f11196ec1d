/// \file
/// kvq/study/npz.hpp — reader of NumPy .npz files: a ZIP archive of .npy members
/// (numpy.savez: stored; numpy.savez_compressed: deflated). The ZIP structure is read
/// here, per PKWARE's APPNOTE.TXT (sections 4.3.6 local header, 4.3.12 central directory,
/// 4.3.14-4.3.16 ZIP64 and end of central directory, 4.5.3 ZIP64 extra field):
///   - the end-of-central-directory record is searched in the last 65557 bytes, and
///     must end exactly at the end of the file (its comment length included);
///   - ZIP64 (used by NumPy's writer for members over 4 GiB and by any archive with
///     more than 65535 members) through the ZIP64 locator and record, and the ZIP64
///     extra field of a central-directory entry;
///   - single-disk archives only; no encryption; methods 0 (stored) and 8 (deflate,
///     inflated with zlib, raw stream); every offset and size is bounds-checked against
///     the file size, every sum overflow-checked; the inflated size must be exactly the
///     size the directory states, and its CRC-32 must match;
///   - member names "NAME.npy" give the array NAME; each member is parsed by the strict
///     .npy reader (kvq/verify/npy.hpp).
/// Problems raise std::invalid_argument("npz: ..."). Lives in the study layer because
/// it needs zlib (linked by kvq::study).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <zlib.h>

#include <kvq/study/byte_source.hpp>
#include <kvq/verify/npy.hpp>

namespace kvq::study::npz {

/// Largest accepted number of archive members.
inline constexpr std::size_t max_members = 1u << 20;

/// One central-directory entry.
struct member {
  std::string name;              ///< The ZIP entry name, e.g. "layers.0.k.npy".
  std::uint16_t method = 0;      ///< 0 stored, 8 deflated.
  std::uint32_t crc = 0;         ///< CRC-32 of the uncompressed bytes.
  std::size_t compressed = 0;    ///< Bytes in the archive.
  std::size_t uncompressed = 0;  ///< Bytes once inflated.
  std::size_t local_offset = 0;  ///< Offset of the member's local header.
  /// The array name: the entry name without ".npy".
  std::string array_name() const {
    return name.size() > 4 && name.compare(name.size() - 4, 4, ".npy") == 0 ? name.substr(0, name.size() - 4) : name;
  }
};

namespace detail {
[[noreturn]] inline void fail(const std::string& what) { throw std::invalid_argument("npz: " + what); }
using kvq::study::detail::checked_add;
using kvq::study::detail::load_le;
inline std::uint64_t le(const std::vector<std::uint8_t>& b, std::size_t at, int bytes) {
  return load_le(b.data() + at, bytes);  // callers index within b (fixed-size records)
}
inline std::size_t to_size(std::uint64_t v, const char* what) {
  if (v > static_cast<std::size_t>(-1)) fail(std::string(what) + " does not fit in memory sizes");
  return static_cast<std::size_t>(v);
}
}  // namespace detail

/// The central directory of an archive.
inline std::vector<member> read_directory(const byte_source& src) {
  using namespace detail;
  const std::size_t size = src.size();
  if (size < 22) fail("not a ZIP archive (" + std::to_string(size) + " bytes, no end-of-central-directory record)");
  const std::size_t tail = size < 22 + 65535 ? size : 22 + 65535;
  const std::vector<std::uint8_t> t = src.read(size - tail, tail, "npz end of central directory");
  std::size_t eocd = tail;  // index in t
  for (std::size_t i = tail - 22 + 1; i-- > 0;) {
    if (t[i] == 0x50 && t[i + 1] == 0x4b && t[i + 2] == 0x05 && t[i + 3] == 0x06 && i + 22 + le(t, i + 20, 2) == tail) {
      eocd = i;
      break;
    }
  }
  if (eocd == tail) fail("not a ZIP archive (no end-of-central-directory record at the end of the file)");
  const std::size_t eocd_abs = size - tail + eocd;
  if (le(t, eocd + 4, 2) != 0 || le(t, eocd + 6, 2) != 0) fail("multi-disk archives are not supported");
  std::uint64_t entries = le(t, eocd + 10, 2), cd_size = le(t, eocd + 12, 4), cd_off = le(t, eocd + 16, 4);
  if (le(t, eocd + 8, 2) != entries) fail("inconsistent entry counts in the end-of-central-directory record");
  if (entries == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_off == 0xFFFFFFFFu) {
    // ZIP64: the locator is the 20 bytes before the end record.
    if (eocd_abs < 20) fail("ZIP64 end-of-central-directory locator missing");
    const std::vector<std::uint8_t> loc = src.read(eocd_abs - 20, 20, "npz ZIP64 locator");
    if (le(loc, 0, 4) != 0x07064b50) fail("ZIP64 end-of-central-directory locator missing");
    if (le(loc, 4, 4) != 0 || le(loc, 16, 4) > 1) fail("multi-disk archives are not supported");
    const std::size_t rec = to_size(le(loc, 8, 8), "ZIP64 record offset");
    const std::vector<std::uint8_t> z = src.read(rec, 56, "npz ZIP64 end-of-central-directory record");
    if (le(z, 0, 4) != 0x06064b50) fail("bad ZIP64 end-of-central-directory record signature");
    if (le(z, 16, 4) != 0 || le(z, 20, 4) != 0) fail("multi-disk archives are not supported");
    entries = le(z, 32, 8);
    if (le(z, 24, 8) != entries) fail("inconsistent entry counts in the ZIP64 record");
    cd_size = le(z, 40, 8);
    cd_off = le(z, 48, 8);
  }
  if (entries > max_members) fail("more than " + std::to_string(max_members) + " members");
  // Each entry takes at least 46 bytes: the count is bounded by the directory size.
  if (entries * 46 > cd_size) fail("central directory of " + std::to_string(cd_size) + " bytes cannot hold " +
                                   std::to_string(entries) + " entries");
  const std::vector<std::uint8_t> cd =
      src.read(to_size(cd_off, "central directory offset"), to_size(cd_size, "central directory size"),
               "npz central directory");
  std::vector<member> out;
  std::size_t at = 0;
  for (std::uint64_t e = 0; e < entries; ++e) {
    if (cd.size() - at < 46) fail("central directory truncated at entry " + std::to_string(e));
    if (le(cd, at, 4) != 0x02014b50) fail("bad central directory entry signature at entry " + std::to_string(e));
    member m;
    const std::uint64_t flags = le(cd, at + 8, 2);
    m.method = static_cast<std::uint16_t>(le(cd, at + 10, 2));
    m.crc = static_cast<std::uint32_t>(le(cd, at + 16, 4));
    std::uint64_t csize = le(cd, at + 20, 4), usize = le(cd, at + 24, 4), loff = le(cd, at + 42, 4);
    const std::size_t nlen = static_cast<std::size_t>(le(cd, at + 28, 2));
    const std::size_t xlen = static_cast<std::size_t>(le(cd, at + 30, 2));
    const std::size_t clen = static_cast<std::size_t>(le(cd, at + 32, 2));
    std::uint64_t disk = le(cd, at + 34, 2);
    if (cd.size() - at - 46 < nlen + xlen + clen) fail("central directory entry " + std::to_string(e) + " truncated");
    m.name.assign(reinterpret_cast<const char*>(cd.data() + at + 46), nlen);
    if (flags & 1u) fail("member '" + m.name + "' is encrypted");
    // ZIP64 extra field (id 1): the 64-bit values of the fields saturated at 0xFFFFFFFF, in order.
    const bool need_u = usize == 0xFFFFFFFFu, need_c = csize == 0xFFFFFFFFu, need_o = loff == 0xFFFFFFFFu;
    const bool need_d = disk == 0xFFFF;
    if (need_u || need_c || need_o || need_d) {
      std::size_t x = at + 46 + nlen;
      const std::size_t xend = x + xlen;
      bool found = false;
      while (xend - x >= 4) {
        const std::size_t id = static_cast<std::size_t>(le(cd, x, 2)), len = static_cast<std::size_t>(le(cd, x + 2, 2));
        if (xend - x - 4 < len) fail("member '" + m.name + "': extra field overruns the entry");
        if (id == 1) {
          std::size_t p = x + 4;
          const std::size_t pend = p + len;
          auto take = [&](std::uint64_t& v, int bytes) {
            if (pend - p < static_cast<std::size_t>(bytes)) fail("member '" + m.name + "': ZIP64 extra field too short");
            v = le(cd, p, bytes);
            p += static_cast<std::size_t>(bytes);
          };
          if (need_u) take(usize, 8);
          if (need_c) take(csize, 8);
          if (need_o) take(loff, 8);
          if (need_d) {
            std::uint64_t dk = 0;
            take(dk, 4);
            disk = dk;
          }
          found = true;
          break;
        }
        x += 4 + len;
      }
      if (!found) fail("member '" + m.name + "': ZIP64 sizes without a ZIP64 extra field");
    }
    if (disk != 0) fail("multi-disk archives are not supported");
    m.compressed = to_size(csize, "compressed size");
    m.uncompressed = to_size(usize, "uncompressed size");
    m.local_offset = to_size(loff, "local header offset");
    if (m.method != 0 && m.method != 8)
      fail("member '" + m.name + "': compression method " + std::to_string(m.method) +
           " is not supported (stored or deflated only)");
    if (m.method == 0 && m.compressed != m.uncompressed)
      fail("member '" + m.name + "': stored member with different compressed and uncompressed sizes");
    for (const auto& o : out)
      if (o.name == m.name) fail("duplicate member '" + m.name + "'");
    out.push_back(std::move(m));
    at += 46 + nlen + xlen + clen;
  }
  return out;
}

/// The uncompressed bytes of a member (inflated, length- and CRC-checked).
inline std::vector<std::uint8_t> read_member(const byte_source& src, const member& m) {
  using namespace detail;
  const std::vector<std::uint8_t> lh = src.read(m.local_offset, 30, "npz local header of '" + m.name + "'");
  if (le(lh, 0, 4) != 0x04034b50) fail("member '" + m.name + "': bad local header signature");
  if (le(lh, 6, 2) & 1u) fail("member '" + m.name + "' is encrypted");
  if (le(lh, 8, 2) != m.method) fail("member '" + m.name + "': local header and directory disagree on the method");
  std::size_t data = 0;
  if (!checked_add(m.local_offset, 30, &data) || !checked_add(data, static_cast<std::size_t>(le(lh, 26, 2)), &data) ||
      !checked_add(data, static_cast<std::size_t>(le(lh, 28, 2)), &data))
    fail("member '" + m.name + "': local header offset overflows");
  const std::vector<std::uint8_t> comp = src.read(data, m.compressed, "npz member '" + m.name + "'");
  std::vector<std::uint8_t> out;
  if (m.method == 0) {
    out = comp;
  } else {
    // Deflate expands at most ~1032:1; a stated size beyond that is a lie (a "zip bomb"
    // header), refused before allocating it.
    std::size_t bound = 0;
    if (!kvq::study::detail::checked_mul(m.compressed, 1032, &bound) || m.uncompressed > bound + 64)
      fail("member '" + m.name + "': stated size " + std::to_string(m.uncompressed) + " impossible for " +
           std::to_string(m.compressed) + " compressed bytes");
    out.resize(m.uncompressed);
    z_stream zs{};
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) throw std::runtime_error("npz: zlib inflateInit2 failed");
    std::size_t in_at = 0, out_at = 0;
    bool complete = false;
    std::uint8_t spare = 0;
    // zlib counts in uInt: feed and drain in chunks of at most 1 GiB. With the output
    // full, a 1-byte spare detects data beyond the stated size.
    const std::size_t chunk = std::size_t{1} << 30;
    for (;;) {
      const std::size_t in_n = comp.size() - in_at < chunk ? comp.size() - in_at : chunk;
      const std::size_t out_n = out.size() - out_at < chunk ? out.size() - out_at : chunk;
      zs.next_in = const_cast<Bytef*>(comp.data() + in_at);
      zs.avail_in = static_cast<uInt>(in_n);
      zs.next_out = out_n ? out.data() + out_at : &spare;
      zs.avail_out = static_cast<uInt>(out_n ? out_n : 1);
      const int rc = inflate(&zs, Z_NO_FLUSH);
      in_at += in_n - zs.avail_in;
      const std::size_t made = (out_n ? out_n : 1) - zs.avail_out;
      if (!out_n && made) break;  // more data than stated
      out_at += made;
      if (rc == Z_STREAM_END) {
        complete = out_at == out.size();
        break;
      }
      if (rc != Z_OK) break;  // corrupt data, or no progress possible (input ended early)
    }
    inflateEnd(&zs);
    if (!complete)
      fail("member '" + m.name + "': corrupt deflate data, or not " + std::to_string(out.size()) +
           " bytes as the directory states");
  }
  uLong crc = crc32(0L, Z_NULL, 0);
  for (std::size_t at = 0; at < out.size();) {
    const std::size_t n = out.size() - at < (std::size_t{1} << 30) ? out.size() - at : (std::size_t{1} << 30);
    crc = crc32(crc, out.data() + at, static_cast<uInt>(n));
    at += n;
  }
  if (static_cast<std::uint32_t>(crc) != m.crc) fail("member '" + m.name + "': CRC-32 mismatch (corrupt archive)");
  return out;
}

/// The member holding array_name (its ZIP name without ".npy"), or null if there is none.
inline const member* find(const std::vector<member>& dir, const std::string& array_name) {
  for (const auto& m : dir)
    if (m.array_name() == array_name) return &m;
  return nullptr;
}

/// A member parsed by the strict .npy reader (kvq/verify/npy.hpp).
inline kvq::verify::npy::array read_array(const byte_source& src, const member& m) {
  const std::vector<std::uint8_t> bytes = read_member(src, m);
  try {
    return kvq::verify::npy::parse(bytes.data(), bytes.size());
  } catch (const std::invalid_argument& e) {
    detail::fail("member '" + m.name + "': " + e.what());
  }
}

}  // namespace kvq::study::npz
