/// \file
/// kvq/study/output.hpp — a run's files: \<study\>.csv (and \<study\>_\<table\>.csv for extra
/// tables) and \<study\>.json (grid, setup, seed, library version, command, timing,
/// findings, the column list of every table).
///
/// The files of one run are written as one unit: each under a temporary name unique to
/// this process and call in the target directory, and only when every one of them is
/// complete are they renamed to their final names. A failure before the renames removes
/// the temporary files and leaves any previous set untouched; the error names the file
/// and the operating system's reason.
#pragma once

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <kvq/config.hpp>
#include <kvq/study/error.hpp>
#include <kvq/study/json.hpp>
#include <kvq/study/study.hpp>
#include <kvq/study/table.hpp>

/// The process id (for temporary file names unique to this process).
#if defined(_WIN32)
#include <process.h>
#define KVQ_STUDY_PID() _getpid()
#else
#include <unistd.h>
#define KVQ_STUDY_PID() getpid()
#endif

namespace kvq::study {

/// (path, contents) of the files of one run.
using file_set = std::vector<std::pair<std::string, std::string>>;

/// Writes every file of the set, or none of them (see the header comment).
/// \throws std::runtime_error naming the file and the reason if a file cannot be written
///         or renamed (the temporary files are removed).
inline void write_files_atomic(const file_set& files) {
  static std::atomic<unsigned long long> counter{0};
  const std::string tag = "." + std::to_string(static_cast<long long>(KVQ_STUDY_PID())) + "." +
                          std::to_string(counter.fetch_add(1)) + ".tmp";
  std::vector<std::string> temps;
  auto cleanup = [&temps] {
    for (const auto& t : temps) std::remove(t.c_str());
  };
  for (const auto& f : files) {
    const std::string tmp = f.first + tag;
    temps.push_back(tmp);
    std::ofstream o(tmp, std::ios::binary | std::ios::trunc);
    if (!o) {
      const std::string why = std::strerror(errno);
      cleanup();
      throw std::runtime_error("cannot write " + tmp + " (" + why + ")");
    }
    o.write(f.second.data(), static_cast<std::streamsize>(f.second.size()));
    o.flush();
    if (!o) {
      const std::string why = std::strerror(errno);
      o.close();
      cleanup();
      throw std::runtime_error("cannot write " + tmp + " (" + why + ")");
    }
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (std::rename(temps[i].c_str(), files[i].first.c_str()) != 0) {
      const std::string why = std::strerror(errno);
      for (std::size_t k = i; k < temps.size(); ++k) std::remove(temps[k].c_str());
      throw std::runtime_error("cannot rename " + temps[i] + " to " + files[i].first + " (" + why + ")");
    }
  }
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
  const fs::path probe = p / (".kvq-write-probe." + std::to_string(static_cast<long long>(KVQ_STUDY_PID())) + ".tmp");
  std::FILE* f = std::fopen(probe.string().c_str(), "wb");
  if (!f) throw usage_error("--out " + dir + ": directory is not writable (" + std::strerror(errno) + ")");
  std::fclose(f);
  fs::remove(probe, ec);
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
                       to_csv(t));
  files.emplace_back((fs::path(dir) / (def.name + ".json")).string(), dump_json(run_json(def, cfg, r, info), 2) + "\n");
  return files;
}

}  // namespace kvq::study
