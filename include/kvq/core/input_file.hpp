// kvq/core/input_file.hpp — the one check of every path kvq reads: it must name a
// regular file. A directory opens and then fails to read, a FIFO blocks the open until a
// writer appears, and /dev/zero never ends; each is refused up front, by its kind, from
// stat alone (nothing is opened).
#pragma once

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace kvq {
namespace detail {

/// Empty if path names a regular file (after symlinks) or nothing at all, else what it
/// is instead.
inline std::string not_regular_file(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  // A missing or unreadable path is left to the reader, whose open names the OS error.
  if (ec || st.type() == fs::file_type::not_found) return {};
  switch (st.type()) {
    case fs::file_type::regular: return {};
    case fs::file_type::directory: return "is a directory, not a regular file";
    case fs::file_type::fifo: return "is a FIFO (named pipe), not a regular file";
    case fs::file_type::character: return "is a character device, not a regular file";
    case fs::file_type::block: return "is a block device, not a regular file";
    case fs::file_type::socket: return "is a socket, not a regular file";
    default: return "is not a regular file";
  }
}

/// Throws std::invalid_argument "<what> '<path>' is a directory, not a regular file"
/// (or the other kind) unless path names a regular file.
inline void require_regular_file(const std::string& what, const std::string& path) {
  const std::string why = not_regular_file(path);
  if (!why.empty()) throw std::invalid_argument(what + " '" + path + "' " + why);
}

}  // namespace detail
}  // namespace kvq
