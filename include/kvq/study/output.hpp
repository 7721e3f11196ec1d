/// \file
/// kvq/study/output.hpp — a run's files: \<study\>.csv (and \<study\>_\<table\>.csv for extra
/// tables) and \<study\>.json (grid, setup, seed, library version, command, timing,
/// findings, the column list of every table).
///
/// The files of one run are written as one unit: each to an exclusively created temporary
/// file in the target directory (kvq/core/atomic_file.hpp), and only when every one of
/// them is complete and synced are they renamed to their final names. A failure before
/// the renames removes the temporary files and leaves any previous set untouched; the
/// error names the file and the operating system's reason.
#pragma once

#include <chrono>
#include <cstdio>
#include <ctime>
#include <exception>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <kvq/config.hpp>
#include <kvq/core/atomic_file.hpp>
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
