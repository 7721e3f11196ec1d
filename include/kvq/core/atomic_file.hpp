/// \file
/// kvq/core/atomic_file.hpp — the library's one way of writing an output file, so that
/// a reader never sees a half-written file and no planted link can redirect the bytes.
///
/// What happens to the target path, decided when the writer opens:
/// ~~~
///   absent or a regular file   the bytes go to a new temporary file in the target's
///                              directory, created exclusively (O_CREAT | O_EXCL |
///                              O_NOFOLLOW: an existing name, a planted symbolic link
///                              included, is never opened; the next name is tried), then
///                              flushed, fsynced and renamed over the target; the
///                              directory is fsynced after the rename
///   a character device, FIFO   written directly, never replaced (`/dev/null` stays the
///                              null device, a pipe gets the bytes)
///   a symbolic link            refused (std::invalid_argument): replacing the link or
///                              writing through it to a file elsewhere would both surprise
///   a directory, block device, refused (std::invalid_argument)
///   socket
/// ~~~
/// Temporary names are `.<name>.<pid>.<n>.tmp` beside the target. On any error the
/// temporary file is removed and the exception names the target path and the operating
/// system's reason: std::invalid_argument for a target kvq refuses, std::runtime_error for
/// a failed create, write, sync or rename (a full disk, `/dev/full`). The target is
/// checked again right before the rename, so a link or directory planted meanwhile is
/// refused rather than replaced.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#else
#error "kvq/core/atomic_file.hpp needs a POSIX system (open with O_EXCL | O_NOFOLLOW, fsync, rename)"
#endif

namespace kvq {

namespace detail {

/// The process-wide counter behind temporary names (tests plant links at the next names).
inline std::atomic<unsigned long long>& atomic_file_counter() noexcept {
  static std::atomic<unsigned long long> n{0};
  return n;
}

/// The temporary name number n of target `path`: `<dir>/.<name>.<pid>.<n>.tmp`.
inline std::string atomic_temp_path(const std::string& path, unsigned long long n) {
  const std::size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  return dir + "." + base + "." + std::to_string(static_cast<long long>(::getpid())) + "." + std::to_string(n) + ".tmp";
}

/// "the reason" of errno e.
inline std::string os_reason(int e) { return std::strerror(e); }

/// Kinds of target an atomic_file handles.
enum class target_kind { absent_or_regular, direct };

/// What to do with `path` (see the file comment); throws for refused targets.
inline target_kind classify_target(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    const int e = errno;
    if (e == ENOENT) return target_kind::absent_or_regular;
    throw std::runtime_error("cannot write '" + path + "': " + os_reason(e));
  }
  if (S_ISREG(st.st_mode)) return target_kind::absent_or_regular;
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) return target_kind::direct;
  if (S_ISLNK(st.st_mode))
    throw std::invalid_argument("refusing to write '" + path +
                                "': it is a symbolic link (give the path of the file itself)");
  if (S_ISDIR(st.st_mode)) throw std::invalid_argument("cannot write '" + path + "': it is a directory");
  throw std::invalid_argument("refusing to write '" + path +
                              "': it is neither a regular file, a character device nor a FIFO");
}

/// Writes all n bytes to fd (retrying short writes and EINTR); errno-style result.
inline int write_all(int fd, const char* p, std::size_t n) noexcept {
  while (n > 0) {
    const ::ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (w == 0) return EIO;
    p += w;
    n -= static_cast<std::size_t>(w);
  }
  return 0;
}

}  // namespace detail

/// One output file written atomically (see the file comment): open, write(), then
/// commit(). Destroying it before commit() leaves the target untouched (a regular or
/// absent target) and removes the temporary file. Not thread-safe; movable.
class atomic_file {
 public:
  /// Opens the writer for `path`: a temporary file beside it, or the target itself when
  /// it is a character device or FIFO.
  /// \throws std::invalid_argument if path is empty or a target kvq refuses (a symbolic
  ///         link, a directory, a block device, a socket)
  /// \throws std::runtime_error if the file cannot be created or opened
  explicit atomic_file(std::string path) : path_(std::move(path)) {
    if (path_.empty()) throw std::invalid_argument("cannot write a file with an empty name");
    if (detail::classify_target(path_) == detail::target_kind::direct) {
      direct_ = true;
      // No O_CREAT and no O_TRUNC: this only ever opens the device or FIFO checked above;
      // fstat confirms it was not swapped for a regular file in between.
      fd_ = ::open(path_.c_str(), O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
      if (fd_ < 0) throw std::runtime_error("cannot open '" + path_ + "': " + detail::os_reason(errno));
      struct stat st {};
      if (::fstat(fd_, &st) != 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
        close_fd();
        throw std::invalid_argument("refusing to write '" + path_ + "': it changed while being opened");
      }
      return;
    }
    for (int attempt = 0; attempt < 10000; ++attempt) {
      tmp_ = detail::atomic_temp_path(path_, detail::atomic_file_counter().fetch_add(1));
      fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0666);
      if (fd_ >= 0) return;
      if (errno != EEXIST) {
        const int e = errno;
        tmp_.clear();
        throw std::runtime_error("cannot create a temporary file for '" + path_ + "': " + detail::os_reason(e));
      }
    }
    tmp_.clear();
    throw std::runtime_error("cannot create a temporary file for '" + path_ + "': every name tried exists");
  }
  atomic_file(const atomic_file&) = delete;
  atomic_file& operator=(const atomic_file&) = delete;
  /// Takes over the other writer's file.
  atomic_file(atomic_file&& o) noexcept
      : path_(std::move(o.path_)), tmp_(std::exchange(o.tmp_, std::string())), fd_(std::exchange(o.fd_, -1)),
        direct_(o.direct_), synced_(o.synced_), done_(std::exchange(o.done_, true)) {}
  atomic_file& operator=(atomic_file&&) = delete;
  /// Discards an uncommitted file: closes it and removes the temporary file.
  ~atomic_file() { discard(); }

  /// The target path.
  const std::string& path() const noexcept { return path_; }
  /// True when the target itself (a character device or FIFO) is being written.
  bool direct() const noexcept { return direct_; }

  /// Appends n bytes.
  /// \throws std::runtime_error naming the target if the write fails (the temporary file
  ///         is removed; the writer is then unusable)
  void write(const void* data, std::size_t n) {
    if (fd_ < 0) throw std::logic_error("kvq::atomic_file::write on '" + path_ + "' after sync or commit");
    const int e = detail::write_all(fd_, static_cast<const char*>(data), n);
    if (e != 0) fail_io("cannot write", e);
  }
  /// Appends the bytes of s.
  void write(std::string_view s) { write(s.data(), s.size()); }

  /// Flushes the bytes to the disk (fsync; not for a device or FIFO) and closes the file;
  /// does nothing the second time.
  /// \throws std::runtime_error naming the target if the sync or close fails (the
  ///         temporary file is removed)
  void sync() {
    if (synced_) return;
    if (fd_ < 0) throw std::logic_error("kvq::atomic_file::sync on '" + path_ + "' after a failure");
    if (!direct_ && ::fsync(fd_) != 0) fail_io("cannot sync", errno);
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0 && errno != EINTR) fail_io("cannot close", errno);
    synced_ = true;
  }

  /// sync(), then renames the temporary file over the target (a regular or absent target)
  /// and syncs the directory; does nothing the second time.
  /// \throws std::invalid_argument if the target has meanwhile become something kvq
  ///         refuses to replace; std::runtime_error if the sync or rename fails (either
  ///         way the temporary file is removed)
  void commit() {
    if (done_) return;
    sync();
    if (!direct_) {
      try {
        if (detail::classify_target(path_) == detail::target_kind::direct)
          throw std::invalid_argument("refusing to replace '" + path_ +
                                      "': it became a device or FIFO while being written");
      } catch (...) {
        discard();
        throw;
      }
      if (std::rename(tmp_.c_str(), path_.c_str()) != 0) fail_io("cannot rename the temporary file onto", errno);
      tmp_.clear();
      sync_directory();
    }
    done_ = true;
  }

 private:
  [[noreturn]] void fail_io(const char* what, int e) {
    discard();
    throw std::runtime_error(std::string(what) + " '" + path_ + "': " + detail::os_reason(e));
  }
  void close_fd() noexcept {
    if (fd_ >= 0) ::close(std::exchange(fd_, -1));
  }
  void discard() noexcept {
    close_fd();
    if (!tmp_.empty()) ::unlink(tmp_.c_str());
    tmp_.clear();
    done_ = true;
  }
  // The rename is durable once the directory entry is on disk; best effort (some file
  // systems refuse to sync a directory, and the file itself is already synced).
  void sync_directory() noexcept {
    const std::size_t slash = path_.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path_.substr(0, slash));
    const int d = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (d >= 0) {
      (void)::fsync(d);
      ::close(d);
    }
  }

  std::string path_, tmp_;
  int fd_ = -1;
  bool direct_ = false, synced_ = false, done_ = false;
};

/// Writes `data` to `path` atomically (atomic_file: write, commit).
/// \throws std::invalid_argument / std::runtime_error as atomic_file, naming the path
inline void write_file_atomic(const std::string& path, std::string_view data) {
  atomic_file f(path);
  f.write(data);
  f.commit();
}

}  // namespace kvq
