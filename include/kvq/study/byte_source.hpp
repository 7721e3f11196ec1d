/// \file
/// kvq/study/byte_source.hpp — random access to the bytes of an outside file (a captured
/// KV file), from memory or from disk, with every read bounds-checked against the size.
///
/// The container readers (safetensors.hpp, npz.hpp) read only what they need: the
/// header, then the one tensor slice a study asks for, so a capture of a whole model
/// (gigabytes) costs the reads of one head. Every offset they compute goes through
/// read(), which rejects a range that does not lie inside the source; the sizes they
/// compute use checked_add/checked_mul.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvq::study {

namespace detail {
inline bool checked_add(std::size_t a, std::size_t b, std::size_t* out) {
  if (b > static_cast<std::size_t>(-1) - a) return false;
  *out = a + b;
  return true;
}
inline bool checked_mul(std::size_t a, std::size_t b, std::size_t* out) {
  if (a != 0 && b > static_cast<std::size_t>(-1) / a) return false;
  *out = a * b;
  return true;
}
inline std::uint64_t load_le(const std::uint8_t* p, int bytes) {
  std::uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
}  // namespace detail

/// Bytes [0, size()) of a file or buffer. read() throws std::invalid_argument (prefixed
/// by what) when [offset, offset + n) is not inside, std::runtime_error on I/O failure.
class byte_source {
 public:
  virtual ~byte_source() = default;
  /// Number of bytes.
  virtual std::size_t size() const = 0;
  /// What the bytes are (a path, or a label), for messages.
  virtual std::string name() const = 0;

  /// Copies bytes [offset, offset + n) to out; `what` prefixes the error.
  void read(std::size_t offset, std::size_t n, std::uint8_t* out, const std::string& what) const {
    std::size_t end = 0;
    if (!detail::checked_add(offset, n, &end) || end > size())
      throw std::invalid_argument(what + ": bytes " + std::to_string(offset) + " + " + std::to_string(n) +
                                  " lie outside the file (" + std::to_string(size()) + " bytes)");
    if (n) read_unchecked(offset, n, out);
  }
  /// Bytes [offset, offset + n) as a vector (allocated only once the range is checked).
  std::vector<std::uint8_t> read(std::size_t offset, std::size_t n, const std::string& what) const {
    std::size_t end = 0;
    if (!detail::checked_add(offset, n, &end) || end > size())  // before allocating n bytes
      throw std::invalid_argument(what + ": bytes " + std::to_string(offset) + " + " + std::to_string(n) +
                                  " lie outside the file (" + std::to_string(size()) + " bytes)");
    std::vector<std::uint8_t> v(n);
    if (n) read_unchecked(offset, n, v.data());
    return v;
  }

 protected:
  /// Copies a range already checked to lie inside.
  virtual void read_unchecked(std::size_t offset, std::size_t n, std::uint8_t* out) const = 0;
};

/// A buffer held by the caller (fuzzing, tests).
class memory_source final : public byte_source {
 public:
  /// The n bytes at p (not copied; they must outlive the source).
  memory_source(const std::uint8_t* p, std::size_t n, std::string label = "<memory>")
      : p_(p), n_(p ? n : 0), label_(std::move(label)) {}
  std::size_t size() const override { return n_; }   ///< Number of bytes.
  std::string name() const override { return label_; }  ///< The label.

 protected:
  /// Copies from the buffer.
  void read_unchecked(std::size_t offset, std::size_t n, std::uint8_t* out) const override {
    std::memcpy(out, p_ + offset, n);
  }

 private:
  const std::uint8_t* p_;
  std::size_t n_;
  std::string label_;
};

/// A regular file, opened once; the size is taken at opening.
class file_source final : public byte_source {
 public:
  /// Opens path; std::invalid_argument if it does not exist, is not a regular file or
  /// cannot be opened.
  explicit file_source(const std::string& path) : path_(path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (ec || !fs::exists(st)) throw std::invalid_argument("no such file '" + path + "'");
    if (!fs::is_regular_file(st)) throw std::invalid_argument("'" + path + "' is not a regular file");
    f_ = std::fopen(path.c_str(), "rb");
    if (!f_) throw std::invalid_argument("cannot open '" + path + "': " + std::strerror(errno));
    const std::uintmax_t n = fs::file_size(path, ec);
    if (ec) {
      std::fclose(f_);
      throw std::invalid_argument("cannot determine the size of '" + path + "'");
    }
    n_ = static_cast<std::size_t>(n);
  }
  file_source(const file_source&) = delete;             ///< Not copyable (owns the FILE).
  file_source& operator=(const file_source&) = delete;  ///< Not copyable (owns the FILE).
  ~file_source() override { std::fclose(f_); }          ///< Closes the file.
  std::size_t size() const override { return n_; }      ///< File size at opening.
  std::string name() const override { return path_; }   ///< The path.

 protected:
  /// Seeks and reads; std::runtime_error on an I/O failure.
  void read_unchecked(std::size_t offset, std::size_t n, std::uint8_t* out) const override {
    // fseeko takes off_t (64-bit on the supported hosts); long would cap at 2 GiB elsewhere.
#if defined(__unix__) || defined(__APPLE__)
    const bool ok = ::fseeko(f_, static_cast<off_t>(offset), SEEK_SET) == 0;
#else
    const bool ok = std::fseek(f_, static_cast<long>(offset), SEEK_SET) == 0;
#endif
    if (!ok || std::fread(out, 1, n, f_) != n) throw std::runtime_error("read error on '" + path_ + "'");
  }

 private:
  std::string path_;
  std::FILE* f_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace kvq::study
