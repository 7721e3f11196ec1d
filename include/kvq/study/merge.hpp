/// \file
/// kvq/study/merge.hpp — the partial result of a shard (DIR/\<study\>.shard-I-of-N.json)
/// and the merge of shards 1..N into the files a single run writes.
///
/// A partial result holds the configuration fingerprint (study, grid as resolved JSON,
/// seed, quick, library version, N) and the recorded slots of the shard's tasks (see
/// shard.hpp). The merge checks that every shard 1..N is present exactly once, that all
/// share the fingerprint, and that each holds exactly the tasks it owns; then it replays
/// the study on the loaded slots. The CSVs are byte-identical to a single run's; the JSON
/// equals a single run's except "command" (the merge's command line), "threads" (shard
/// 1's) and "timing" (started_utc: the earliest shard's start; wall_seconds: the sum of
/// the shards' run times).
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <kvq/config.hpp>
#include <kvq/core/input_file.hpp>
#include <kvq/study/error.hpp>
#include <kvq/study/json.hpp>
#include <kvq/study/output.hpp>
#include <kvq/study/params.hpp>
#include <kvq/study/shard.hpp>
#include <kvq/study/study.hpp>

namespace kvq::study {

/// The file name of shard I of N: \<study\>.shard-I-of-N.json.
inline std::string partial_file_name(const std::string& study, const shard_spec& s) {
  return study + ".shard-" + std::to_string(s.index) + "-of-" + std::to_string(s.count) + ".json";
}

/// The partial result of one shard (what it writes to --out).
inline json partial_json(const study_def& def, const config& cfg, const shard_state& st, const run_info& info) {
  json j = json::object();
  j["kvq_partial_result"] = 1;
  j["study"] = def.name;
  j["kvq_version"] = KVQ_VERSION_STRING;
  j["seed"] = info.seed;
  j["quick"] = info.quick;
  j["grid"] = cfg.to_json();
  j["shard"] = json{{"index", st.spec.index}, {"count", st.spec.count}};
  j["command"] = info.command;
  j["threads"] = info.threads;
  if (info.csv_digits != csv_default_digits) j["csv_digits"] = info.csv_digits;
  j["timing"] = json{{"started_utc", info.started_utc}, {"wall_seconds", info.wall_seconds}};
  j["calls"] = st.calls;
  return j;
}

/// One partial result read back, with the file it came from.
struct partial_result {
  /// The file it was read from (or a name for messages, such as "rank R").
  std::string path;
  /// Its JSON.
  json data;
  /// Its shard.
  shard_spec spec;
};

namespace detail {

// Equality of two JSON values regardless of the order of object keys (a partial result
// rewritten by another tool may reorder them; the values are what count).
inline bool same_json(const json& a, const json& b) {
  return nlohmann::json::parse(dump_json(a, -1)) == nlohmann::json::parse(dump_json(b, -1));
}

// The grid JSON back into option texts: integers in decimal, numbers with 17
// significant digits (strtod gives back the same double), names as given.
inline std::vector<std::pair<std::string, std::string>> overrides_of_grid(const study_def& def, const json& grid,
                                                                          const std::string& where) {
  std::vector<std::pair<std::string, std::string>> ov;
  for (const auto& p : def.params) {
    if (!grid.contains(p.name)) throw usage_error(where + ": grid has no '" + p.name + "' (made by another kvq build?)");
    const json& v = grid[p.name];
    std::vector<std::string> items;
    auto text_of = [&](const json& x) -> std::string {
      if (x.is_string()) return x.get<std::string>();
      if (x.is_number_integer()) return std::to_string(x.get<long long>());
      char b[40];
      std::snprintf(b, sizeof b, "%.17g", x.get<double>());
      return b;
    };
    if (v.is_array())
      for (const auto& x : v) items.push_back(text_of(x));
    else
      items.push_back(text_of(v));
    ov.emplace_back(p.name, join(items, ","));
  }
  return ov;
}

}  // namespace detail

/// Reads every \<study\>.shard-I-of-N.json in the directories (usage_error naming the
/// problem: no such directory, no partial results, a file that is not a partial result).
inline std::vector<partial_result> read_partials(const std::vector<std::string>& dirs) {
  namespace fs = std::filesystem;
  std::vector<partial_result> all;
  for (const auto& d : dirs) {
    std::error_code ec;
    if (!fs::is_directory(d, ec)) throw usage_error("merge: '" + d + "' is not a directory");
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(d, ec)) {
      const std::string n = e.path().filename().string();
      const std::size_t at = n.find(".shard-");
      if (at == std::string::npos || n.size() < 5 || n.compare(n.size() - 5, 5, ".json") != 0) continue;
      names.push_back(n);
    }
    if (ec) throw usage_error("merge: cannot read directory '" + d + "' (" + ec.message() + ")");
    std::sort(names.begin(), names.end());
    if (names.empty()) throw usage_error("merge: no partial results (<study>.shard-I-of-N.json) in '" + d + "'");
    for (const auto& n : names) {
      partial_result pr;
      pr.path = (fs::path(d) / n).string();
      if (const std::string why = kvq::detail::not_regular_file(pr.path); !why.empty())
        throw usage_error("merge: " + pr.path + " " + why);
      std::ifstream in(pr.path, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      try {
        pr.data = json::parse(ss.str());
      } catch (const std::exception&) {
        throw usage_error("merge: " + pr.path + " is not valid JSON");
      }
      if (!pr.data.is_object() || !pr.data.contains("kvq_partial_result") || !pr.data.contains("shard") ||
          !pr.data.contains("calls") || !pr.data.contains("study"))
        throw usage_error("merge: " + pr.path + " is not a partial result of kvq study --shard");
      pr.spec.index = pr.data["shard"].at("index").get<unsigned>();
      pr.spec.count = pr.data["shard"].at("count").get<unsigned>();
      if (pr.spec.count < 1 || pr.spec.index < 1 || pr.spec.index > pr.spec.count ||
          n != partial_file_name(pr.data["study"].get<std::string>(), pr.spec))
        throw usage_error("merge: " + pr.path + " does not hold the shard its name says");
      all.push_back(std::move(pr));
    }
  }
  return all;
}

/// Checks the shards of one study (complete, each once, same fingerprint, each holding
/// exactly its own tasks) and returns the replay record with every task's slot.
/// shards must not be empty.
/// \throws usage_error if the shards differ in version, seed, grid or shard count, a shard
///         is given twice or missing, or a shard holds other tasks than its own.
inline shard_state merged_state(const std::vector<const partial_result*>& shards) {
  const partial_result& first = *shards.front();
  const std::string study = first.data["study"].get<std::string>();
  const unsigned count = first.spec.count;
  std::map<unsigned, const partial_result*> by_index;
  for (const partial_result* p : shards) {
    const json& d = p->data;
    auto differs = [&](const char* key, const std::string& what) {
      if (!detail::same_json(d.value(key, json()), first.data.value(key, json())))
        throw usage_error("merge: " + p->path + " and " + first.path + " are from different " + what);
    };
    differs("kvq_version", "library versions");
    differs("seed", "seeds");
    differs("quick", "grids (--quick)");
    differs("grid", "grids");
    if (p->spec.count != count)
      throw usage_error("merge: " + p->path + " and " + first.path + " split the study " + study +
                        " into different shard counts (" + std::to_string(p->spec.count) + " and " +
                        std::to_string(count) + ")");
    if (!by_index.emplace(p->spec.index, p).second)
      throw usage_error("merge: shard " + std::to_string(p->spec.index) + "/" + std::to_string(count) + " of study " +
                        study + " given twice (" + by_index[p->spec.index]->path + " and " + p->path + ")");
  }
  for (unsigned i = 1; i <= count; ++i)
    if (!by_index.count(i))
      throw usage_error("merge: shard " + std::to_string(i) + "/" + std::to_string(count) + " of study " + study +
                        " is missing");
  shard_state st;
  st.mode = shard_mode::replay;
  const json& calls0 = first.data["calls"];
  for (std::size_t c = 0; c < calls0.size(); ++c) {
    const std::size_t n = calls0[c].at("tasks").get<std::size_t>();
    std::vector<json> slot(n);
    std::vector<bool> seen(n, false);
    for (const auto& e : by_index) {
      const partial_result& p = *e.second;
      const json& calls = p.data["calls"];
      if (calls.size() != calls0.size() || calls[c].at("tasks").get<std::size_t>() != n)
        throw usage_error("merge: " + p.path + " and " + first.path + " hold different task lists");
      std::size_t owned = 0;
      for (std::size_t i = 0; i < n; ++i) owned += p.spec.owns(i);
      const json& res = calls[c].at("results");
      if (res.size() != owned)
        throw usage_error("merge: " + p.path + " holds " + std::to_string(res.size()) + " tasks of phase " +
                          std::to_string(c + 1) + ", its shard owns " + std::to_string(owned));
      for (const auto& r : res) {
        const std::size_t i = r.at(0).get<std::size_t>();
        if (i >= n || !p.spec.owns(i) || seen[i])
          throw usage_error("merge: " + p.path + " holds task " + std::to_string(i) + " of phase " +
                            std::to_string(c + 1) + ", which is not its own (overlapping shards)");
        seen[i] = true;
        slot[i] = r;
      }
    }
    json res = json::array();
    for (auto& s : slot) res.push_back(std::move(s));
    st.calls.push_back(json{{"tasks", n}, {"results", std::move(res)}});
  }
  return st;
}

/// A study run put together from its shards: the grid, the result and how it was made.
struct merged_run {
  /// The resolved grid.
  config cfg;
  /// The study's result replayed from the shards.
  result res;
  /// Command, seed, threads (shard 1's) and timing (earliest start, summed wall time).
  run_info info;
};

/// Checks the shards of one study (merged_state) and replays the study on their slots.
/// partial_result::path names a shard in messages (its file, or "rank R" in kvq-mpi).
/// \throws usage_error as merged_state(), or if the shards are from another kvq version
///         or their grid or phases do not match this build's study.
inline merged_run merge_study(const study_def& def, const std::vector<const partial_result*>& shards,
                              const std::string& command_line) {
  shard_state st = merged_state(shards);
  const json& d = shards.front()->data;
  const std::string& where = shards.front()->path;
  if (d["kvq_version"] != KVQ_VERSION_STRING)
    throw usage_error("merge: " + where + " is from kvq " + dump_json(d["kvq_version"], -1) + ", this is kvq " +
                      KVQ_VERSION_STRING);
  const std::uint64_t seed = d["seed"].get<std::uint64_t>();
  const bool quick = d["quick"].get<bool>();
  merged_run m{resolve(def, quick, seed, detail::overrides_of_grid(def, d["grid"], where)), result{}, run_info{}};
  if (!detail::same_json(m.cfg.to_json(), d["grid"]))
    throw usage_error("merge: " + where + ": grid does not resolve to itself (made by another kvq build?)");
  context ctx{m.cfg, 1, nullptr, &st};
  m.res = def.run(ctx);
  if (st.next_call != st.calls.size())
    throw usage_error("merge: " + where + " holds more phases than the study runs (made by another kvq build?)");
  m.info.command = command_line;
  m.info.seed = seed;
  m.info.quick = quick;
  double wall = 0;
  std::string started;
  for (const partial_result* p : shards) {
    if (p->spec.index == 1) {
      m.info.threads = p->data.value("threads", 0u);
      m.info.csv_digits = p->data.value("csv_digits", csv_default_digits);
      if (m.info.csv_digits < 1 || m.info.csv_digits > csv_exact_digits)
        throw usage_error("merge: " + p->path + ": csv_digits " + std::to_string(m.info.csv_digits) +
                          " is not 1 to 17");
    }
    const json t = p->data.value("timing", json::object());
    wall += t.value("wall_seconds", 0.0);
    const std::string s0 = t.value("started_utc", std::string());
    if (started.empty() || s0 < started) started = s0;
  }
  m.info.started_utc = started;
  m.info.wall_seconds = wall;
  return m;
}

/// Merges the partial results in the directories into the files single runs write in
/// out_dir (one set per study found). Everything is checked before anything is written;
/// bad input raises usage_error. Returns the files written.
template <class FindStudy>
file_set merge_partials(const std::vector<std::string>& dirs, const std::string& out_dir,
                        const std::string& command_line, FindStudy&& find_study) {
  const std::vector<partial_result> all = read_partials(dirs);
  std::map<std::string, std::vector<const partial_result*>> by_study;
  for (const auto& p : all) by_study[p.data["study"].get<std::string>()].push_back(&p);
  std::vector<std::pair<std::string, file_set>> sets;  // (study, its files)
  for (const auto& g : by_study) {
    const study_def* def = find_study(g.first);
    if (!def) throw usage_error("merge: " + g.second.front()->path + " is from an unknown study '" + g.first + "'");
    const merged_run m = merge_study(*def, g.second, command_line);
    sets.emplace_back(def->name, run_files(*def, m.cfg, m.res, m.info, out_dir));
  }
  check_out_dir(out_dir);
  file_set files;
  for (const auto& s : sets) {
    (void)write_output_set(out_dir, s.first, s.second);
    for (const auto& f : s.second) files.push_back(f);
  }
  return files;
}

}  // namespace kvq::study
