/// \file
/// kvq/study/study.hpp — what a study is: its name, summary, description, declared
/// grid parameters, stated output tables, an extra grid check and the run; and what a run
/// gets (the resolved grid, threads, progress) and returns (tables, findings, setup).
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <kvq/study/json.hpp>
#include <kvq/study/params.hpp>
#include <kvq/study/progress.hpp>
#include <kvq/study/table.hpp>

namespace kvq::study {

struct shard_state;  // kvq/study/shard.hpp
struct kv_head;      // kvq/study/kv_file.hpp

/// Whether a study takes captured Q/K/V (--kv FILE, docs/kv-input.md), and the grid
/// parameters that the captured shapes replace: the context list becomes the captured
/// token count, the head dimension the captured one, and the query count is capped at
/// the token count minus one (the last captured positions are the queries).
struct kv_input_params {
  bool accepted = false;              ///< The study takes --kv.
  std::string contexts = "contexts";  ///< Its context-length parameter.
  std::string head_dim = "head-dim";  ///< Its head-dimension parameter.
  std::string queries = "queries";    ///< Its query-count parameter.
  /// The grid parameters that only set a synthetic treatment, each with the value that
  /// means none (outliers: magnitudes 0). On a captured head without --kv-treatments they
  /// are fixed at that value, and giving one is an error, so the grid recorded is the
  /// one run.
  std::vector<std::pair<std::string, std::string>> treatment_params;
  /// Extra check of the resolved grid against the captured head (may throw usage_error);
  /// may be empty. Runs before any output exists.
  std::function<void(const config&, const kv_head&)> validate;
};

/// What a study gets to run: the resolved grid, the execution resources, and, in a
/// `--shard I/N` run or a merge, the shard's record (null in a plain run).
struct context {
  /// The resolved grid.
  const config& cfg;
  /// Threads for run_tasks().
  unsigned threads;
  /// Progress display (may be null).
  progress* prog;
  /// The shard's record in a `--shard I/N` run or a merge; null in a plain run.
  shard_state* shard = nullptr;
  const kv_head* kv = nullptr;  ///< --kv: the captured head (null: synthetic Q/K/V)
};

/// A study: name, one-line summary, longer description, declared parameters, an
/// extra grid check (may throw usage_error), and the run.
struct study_def {
  /// Name of the study on the command line.
  std::string name;
  /// One-line summary.
  std::string summary;
  /// Longer description.
  std::string description;
  /// Declared grid parameters.
  std::vector<param> params;
  /// The tables it writes (columns only): the stated CSV schema.
  std::vector<table> outputs;  // the tables it writes (columns only): the stated CSV schema
  /// Extra grid check (may throw usage_error); may be empty.
  std::function<void(const config&)> validate;
  /// The run.
  std::function<result(const context&)> run;
  kv_input_params kv;  ///< --kv support (off unless the study sets kv.accepted)
};

/// Resolve defaults (+ --quick) and overrides into a config; throws usage_error.
inline config resolve(const study_def& s, bool quick, std::uint64_t seed,
                      const std::vector<std::pair<std::string, std::string>>& overrides) {
  config c;
  c.seed = seed;
  c.quick = quick;
  for (const auto& p : s.params)
    c.assign(p, quick && !p.quick_default.empty() ? p.quick_default : p.full_default);
  for (const auto& o : overrides) {
    auto it = std::find_if(s.params.begin(), s.params.end(), [&](const param& p) { return p.name == o.first; });
    if (it == s.params.end()) {
      std::vector<std::string> names;
      for (const auto& p : s.params) names.push_back("--" + p.name);
      throw usage_error("study " + s.name + ": unknown option '--" + o.first + "' (grid options: " +
                        join(names) + ")");
    }
    c.assign(*it, o.second);
  }
  if (s.validate) s.validate(c);
  return c;
}

}  // namespace kvq::study
