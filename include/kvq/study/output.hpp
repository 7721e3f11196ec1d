/// \file
/// kvq/study/output.hpp — a run's files: \<study\>.csv (and \<study\>_\<table\>.csv for extra
/// tables), \<study\>.json (grid, setup, seed, library version, command, timing,
/// findings, the column list of every table) and \<study\>.manifest.json, which makes them
/// one set.
///
/// The files of one run are published as one set (write_output_set):
///  1. every file is written and synced in a private staging directory inside --out,
///     `.<study>.staging-XXXXXX` (mkdtemp), which the run holds an flock on;
///  2. under an exclusive flock on --out itself (so concurrent runs publish one after
///     the other, never interleaved), the files are renamed to their final names;
///  3. last, \<study\>.manifest.json is written through the atomic writer: the study and,
///     for each file, its name, size in bytes and SHA-256.
/// A reader accepts a set only when the manifest exists and every file it lists has that
/// size and digest (check_output_set; notebooks/kvqplot.py does the same). A run killed
/// between the renames leaves files that disagree with the manifest (the previous run's,
/// or none), which a reader refuses; it never leaves a set that reads as complete. The
/// staging directory of a run that died is removed by the next run of the same study in
/// that directory (it is stale once nobody holds its flock). Nothing else in --out is
/// touched: only the set's own names, the manifest and the run's own staging directory.
/// A failure before the renames leaves any previous set untouched; the error names the
/// file and the operating system's reason.
///
/// For tests only: the environment variable KVQ_TEST_PAUSE_BETWEEN_RENAMES=MS makes the
/// publisher sleep MS milliseconds after each rename but the last, so that a test can
/// kill a run in the middle of publishing.
#pragma once

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <ctime>
#include <exception>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <kvq/config.hpp>
#include <kvq/core/atomic_file.hpp>
#include <kvq/core/sha256.hpp>
#include <kvq/study/error.hpp>
#include <kvq/study/json.hpp>
#include <kvq/study/study.hpp>
#include <kvq/study/table.hpp>

namespace kvq::study {

/// (path, contents) of the files of one run.
using file_set = std::vector<std::pair<std::string, std::string>>;

/// Writes every file of the set, or none of them (see the header comment): each through
/// kvq::atomic_file (an exclusive temporary file beside it, synced), and the renames only
/// once all are complete.
/// \throws std::runtime_error naming the file and the reason if a file cannot be written
///         or renamed (the temporary files are removed); std::invalid_argument if a
///         target is one kvq refuses to replace (a symbolic link, a directory)
inline void write_files_atomic(const file_set& files) {
  std::vector<kvq::atomic_file> out;
  out.reserve(files.size());
  for (const auto& f : files) {
    out.emplace_back(f.first);
    out.back().write(f.second);
  }
  for (auto& f : out) f.sync();
  for (auto& f : out) f.commit();
}

namespace detail {

/// Closes a descriptor when it goes out of scope (and with it any flock it holds).
struct fd_guard {
  int fd = -1;
  explicit fd_guard(int f) noexcept : fd(f) {}
  fd_guard(const fd_guard&) = delete;
  fd_guard& operator=(const fd_guard&) = delete;
  ~fd_guard() {
    if (fd >= 0) ::close(fd);
  }
};

/// The file that marks a staging directory as kvq's (see remove_stale_staging).
inline constexpr const char* staging_marker = ".kvq-staging";

/// The prefix of the staging directories of `study`: `.<study>.staging-`.
inline std::string staging_prefix(const std::string& study) { return "." + study + ".staging-"; }

/// Removes the staging directories of `study` in dir whose run has died (nobody holds
/// their flock): the regular files in them, then the directory. Anything else (a
/// directory inside, a link planted at a staging name) is left alone.
inline void remove_stale_staging(const std::string& dir, const std::string& study) {
  const std::string prefix = staging_prefix(study);
  std::vector<std::string> names;
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      const std::string n = e->d_name;
      if (n.size() == prefix.size() + 6 && n.compare(0, prefix.size(), prefix) == 0) names.push_back(n);
    }
    ::closedir(d);
  }
  for (const auto& n : names) {
    const std::string path = dir + "/" + n;
    fd_guard fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (fd.fd < 0 || ::flock(fd.fd, LOCK_EX | LOCK_NB) != 0) continue;  // a live run's, or not ours
    const int listing = ::dup(fd.fd);
    if (listing < 0) continue;
    DIR* d = ::fdopendir(listing);
    if (!d) {
      ::close(listing);
      continue;
    }
    std::vector<std::string> inside;
    bool marked = false;
    while (const dirent* e = ::readdir(d)) {
      inside.push_back(e->d_name);
      marked = marked || inside.back() == staging_marker;
    }
    ::closedir(d);
    // Files only in a directory a run marked as its own; an unmarked one (a run that
    // died right after mkdtemp, or a user's) is removed only if empty.
    for (const auto& f : marked ? inside : std::vector<std::string>{}) {
      struct stat st {};
      if (f == "." || f == ".." || ::fstatat(fd.fd, f.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      if (S_ISREG(st.st_mode)) ::unlinkat(fd.fd, f.c_str(), 0);
    }
    ::rmdir(path.c_str());  // fails, harmlessly, if anything was left inside
  }
}

/// Sleeps KVQ_TEST_PAUSE_BETWEEN_RENAMES milliseconds, if set (see the file comment).
inline void test_pause_between_renames() {
  const char* v = std::getenv("KVQ_TEST_PAUSE_BETWEEN_RENAMES");
  if (!v || !*v) return;
  const long ms = std::strtol(v, nullptr, 10);
  if (ms <= 0) return;
  timespec ts{ms / 1000, (ms % 1000) * 1000000L};
  while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

[[noreturn]] inline void fail_errno(const std::string& what, int e) {
  throw std::runtime_error(what + ": " + kvq::detail::os_reason(e));
}

}  // namespace detail

/// The manifest of a set (see the file comment): `<study>.manifest.json`.
inline std::string manifest_name(const std::string& study) { return study + ".manifest.json"; }

/// Writes the files of one run of `study` (paths in dir, as run_files makes them) as one
/// set: staged, renamed under a lock on dir, then the manifest (see the file comment).
/// Returns the paths written, the manifest last.
/// \throws std::invalid_argument if a target is one kvq refuses to replace (a symbolic
///         link, a directory, a device or FIFO: a set holds regular files only), before
///         anything is written; std::runtime_error naming the file and the reason if a
///         file cannot be written or renamed (the staging directory is removed)
inline std::vector<std::string> write_output_set(const std::string& dir, const std::string& study,
                                                 const file_set& files) {
  namespace fs = std::filesystem;
  std::vector<std::pair<std::string, const std::string*>> set;  // (file name, contents)
  for (const auto& f : files) set.emplace_back(fs::path(f.first).filename().string(), &f.second);
  const std::string manifest = (fs::path(dir) / manifest_name(study)).string();
  std::vector<std::string> targets;
  for (const auto& f : set) targets.push_back((fs::path(dir) / f.first).string());
  targets.push_back(manifest);
  for (const auto& t : targets)
    if (kvq::detail::classify_target(t) == kvq::detail::target_kind::direct)
      throw std::invalid_argument("refusing to replace '" + t + "': it is a device or FIFO (an output set holds "
                                  "regular files only)");

  detail::remove_stale_staging(dir, study);
  // 1. Staging: a fresh directory, flocked before anything is written into it. A cleaner
  //    that took it between mkdtemp and our flock has removed it (no links left): retry.
  std::string staging;
  int staging_fd = -1;
  for (int attempt = 0; attempt < 100 && staging_fd < 0; ++attempt) {
    std::string tmpl = (fs::path(dir) / (detail::staging_prefix(study) + "XXXXXX")).string();
    if (!::mkdtemp(tmpl.data())) detail::fail_errno("cannot create a staging directory in '" + dir + "'", errno);
    const int fd = ::open(tmpl.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) continue;
    struct stat st {};
    if (::flock(fd, LOCK_EX) != 0 || ::fstat(fd, &st) != 0 || st.st_nlink == 0) {
      ::close(fd);
      continue;
    }
    const int marker = ::openat(fd, detail::staging_marker, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (marker < 0) {
      const int e = errno;
      ::close(fd);
      ::rmdir(tmpl.c_str());
      detail::fail_errno("cannot write into the staging directory '" + tmpl + "'", e);
    }
    ::close(marker);
    staging = tmpl;
    staging_fd = fd;
  }
  if (staging_fd < 0) throw std::runtime_error("cannot create a staging directory in '" + dir + "'");
  detail::fd_guard staging_guard(staging_fd);
  struct cleanup {
    const std::string& path;
    const std::vector<std::pair<std::string, const std::string*>>& set;
    ~cleanup() {
      for (const auto& f : set) ::unlink((path + "/" + f.first).c_str());
      ::unlink((path + "/" + detail::staging_marker).c_str());
      ::rmdir(path.c_str());
    }
  } cleanup_staging{staging, set};

  json mf = json::object();
  mf["kvq_output_set"] = 1;
  mf["study"] = study;
  json listed = json::array();
  for (const auto& f : set) {
    kvq::write_file_atomic(staging + "/" + f.first, *f.second);
    listed.push_back(json{{"name", f.first}, {"bytes", f.second->size()}, {"sha256", kvq::sha256_hex(*f.second)}});
  }
  mf["files"] = listed;

  // 2. Publish under the directory's lock, so that two runs never interleave their renames.
  detail::fd_guard dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.fd < 0) detail::fail_errno("cannot open '" + dir + "'", errno);
  while (::flock(dir_fd.fd, LOCK_EX) != 0)
    if (errno != EINTR) detail::fail_errno("cannot lock '" + dir + "'", errno);
  for (std::size_t i = 0; i < set.size(); ++i) {
    // Checked again under the lock: a link or directory planted meanwhile is refused.
    if (kvq::detail::classify_target(targets[i]) == kvq::detail::target_kind::direct)
      throw std::invalid_argument("refusing to replace '" + targets[i] + "': it is a device or FIFO");
    const std::string from = staging + "/" + set[i].first;
    if (std::rename(from.c_str(), targets[i].c_str()) != 0)
      detail::fail_errno("cannot rename the staged file onto '" + targets[i] + "'", errno);
    if (i + 1 < set.size()) detail::test_pause_between_renames();
  }
  (void)::fsync(dir_fd.fd);  // best effort, as kvq::atomic_file's directory sync
  // 3. The manifest, last: only now does the set read as complete.
  kvq::write_file_atomic(manifest, dump_json(mf, 2) + "\n");
  return targets;
}

/// Checks the set of `study` in dir against its manifest (see the file comment).
/// Returns an empty string for a complete, consistent set, else the problem in one line.
inline std::string check_output_set(const std::string& dir, const std::string& study) {
  namespace fs = std::filesystem;
  const std::string manifest = (fs::path(dir) / manifest_name(study)).string();
  auto read = [](const std::string& path, std::string& out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    std::ostringstream ss;
    ss << in.rdbuf();
    out = ss.str();
    return static_cast<bool>(in) || in.eof();
  };
  std::string text;
  if (!read(manifest, text)) return "no " + manifest + ": not a complete output set";
  json mf;
  try {
    mf = json::parse(text);
  } catch (const std::exception&) {
    return manifest + ": not a manifest";
  }
  if (!mf.is_object() || mf.value("kvq_output_set", 0) != 1 || !mf.contains("files") || !mf["files"].is_array())
    return manifest + ": not a manifest";
  if (mf.value("study", std::string()) != study) return manifest + ": not the manifest of study " + study;
  for (const auto& f : mf["files"]) {
    const std::string name = f.value("name", std::string());
    if (name.empty() || name.find('/') != std::string::npos) return manifest + ": bad file name";
    std::string data;
    if (!read((fs::path(dir) / name).string(), data)) return name + " is missing (an incomplete output set)";
    if (data.size() != f.value("bytes", std::size_t{0}) || kvq::sha256_hex(data) != f.value("sha256", std::string()))
      return name + " does not match " + manifest_name(study) + " (a mixed or incomplete output set; run again)";
  }
  return std::string();
}

/// Makes sure DIR exists and accepts files, before a (possibly long) run starts.
/// \throws usage_error if DIR is empty, exists and is not a directory, cannot be created,
///         or is not writable.
inline void check_out_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  if (dir.empty()) throw usage_error("--out: empty directory name");
  std::error_code ec;
  const fs::path p(dir);
  if (fs::exists(p, ec) && !fs::is_directory(p, ec))
    throw usage_error("--out " + dir + ": exists and is not a directory (give a directory to write the CSV/JSON into)");
  if (!fs::exists(p, ec)) {
    fs::create_directories(p, ec);
    if (ec) throw usage_error("--out " + dir + ": cannot create directory (" + ec.message() + ")");
  }
  // The probe is an exclusively created temporary file (never a planted link's target),
  // removed again because it is never committed.
  try {
    kvq::atomic_file probe((p / ".kvq-write-probe").string());
  } catch (const std::exception& e) {
    throw usage_error("--out " + dir + ": directory is not writable (" + e.what() + ")");
  }
}

/// The current time as an ISO 8601 UTC string (for the JSON's timing).
inline std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[64];
  std::tm tm{};
#if defined(_WIN32)
  gmtime_s(&tm, &t);
#else
  gmtime_r(&t, &tm);
#endif
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

/// How a run was made, for its JSON.
struct run_info {
  std::string command;       ///< the command line
  /// Seed of the run.
  std::uint64_t seed = 1;
  /// Whether the --quick grid was used.
  bool quick = false;
  /// Threads the run used.
  unsigned threads = 1;
  /// Start time, ISO 8601 UTC.
  std::string started_utc;
  /// Wall time of the run in seconds.
  double wall_seconds = 0;
  /// Significant digits of the reals in the CSV files (--digits).
  int csv_digits = csv_default_digits;
};

/// The JSON of a run.
inline json run_json(const study_def& def, const config& cfg, const result& r, const run_info& info) {
  json meta = json::object();
  meta["study"] = def.name;
  meta["summary"] = def.summary;
  meta["kvq_version"] = KVQ_VERSION_STRING;
  meta["command"] = info.command;
  meta["seed"] = info.seed;  // unsigned 64-bit: 2^64 - 1 is written as such
  meta["quick"] = info.quick;
  if (info.csv_digits != csv_default_digits) meta["csv_digits"] = info.csv_digits;
  meta["threads"] = info.threads;
  meta["grid"] = cfg.to_json();
  meta["setup"] = r.setup;
  json tabs = json::array();
  for (const auto& t : r.tables) {
    json tj = json::object();
    tj["file"] = def.name + (t.name.empty() ? "" : "_" + t.name) + ".csv";
    tj["title"] = t.title;
    tj["rows"] = t.rows.size();
    json cols = json::array();
    for (const auto& c : t.columns) cols.push_back(json{{"name", c.name}, {"help", c.help}});
    tj["columns"] = cols;
    tabs.push_back(tj);
  }
  meta["tables"] = tabs;
  meta["findings"] = r.findings;
  meta["timing"] = json{{"started_utc", info.started_utc}, {"wall_seconds", info.wall_seconds}};
  return meta;
}

/// The files of a run in DIR: one CSV per table, then the JSON.
inline file_set run_files(const study_def& def, const config& cfg, const result& r, const run_info& info,
                          const std::string& dir) {
  namespace fs = std::filesystem;
  file_set files;
  for (const auto& t : r.tables)
    files.emplace_back((fs::path(dir) / (def.name + (t.name.empty() ? "" : "_" + t.name) + ".csv")).string(),
                       to_csv(t, info.csv_digits));
  files.emplace_back((fs::path(dir) / (def.name + ".json")).string(), dump_json(run_json(def, cfg, r, info), 2) + "\n");
  return files;
}

}  // namespace kvq::study
