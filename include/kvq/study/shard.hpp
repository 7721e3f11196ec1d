/// \file
/// kvq/study/shard.hpp — one study run split across processes (`--shard I/N`).
///
/// A study marks the run_tasks call whose tasks are independent of each other (its main
/// phase) as sharded: task i of the c-th sharded call belongs to shard (i mod N) + 1.
/// A shard computes only the tasks it owns and records each task's slot as JSON; the
/// merge replays the study with every slot loaded from the shards instead of computed,
/// so the aggregation (tables, findings, setup) is the very code of a single run on the
/// very bits of a single run. Slot doubles travel as their 64-bit patterns (NaN, -0 and
/// infinities included), never as decimal text.
///
/// A phase whose results a later phase reads (a reference attention, a scenario) is not
/// sharded: every shard computes it in full, and the merge skips it (replaying()).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <kvq/study/error.hpp>
#include <kvq/study/json.hpp>
#include <kvq/study/runner.hpp>
#include <kvq/study/study.hpp>
#include <kvq/study/table.hpp>

namespace kvq::study {

/// Shard I of N (1 <= I <= N).
struct shard_spec {
  /// I, 1-based.
  unsigned index = 1;
  /// N, the number of shards.
  unsigned count = 1;
  /// Whether task i of a sharded call belongs to this shard.
  bool owns(std::size_t task) const { return task % count == index - 1; }
};

/// "I/N": decimal digits only, 1 <= I <= N <= 100000; throws usage_error.
inline shard_spec parse_shard(const std::string& v) {
  const std::string bad = "--shard: '" + v + "' is not a valid shard (allowed: I/N with 1 <= I <= N, e.g. 2/4)";
  const std::size_t slash = v.find('/');
  if (slash == std::string::npos) throw usage_error(bad);
  auto number = [&](const std::string& s) {
    if (s.empty() || s.size() > 6) throw usage_error(bad);
    unsigned x = 0;
    for (char c : s) {
      if (c < '0' || c > '9') throw usage_error(bad);
      x = x * 10 + static_cast<unsigned>(c - '0');
    }
    return x;
  };
  shard_spec s;
  s.index = number(v.substr(0, slash));
  s.count = number(v.substr(slash + 1));
  if (s.count < 1 || s.count > 100000 || s.index < 1 || s.index > s.count) throw usage_error(bad);
  return s;
}

/// Whether a sharded run computes (a shard) or loads (the merge) its tasks' slots.
enum class shard_mode {
  compute,  ///< a shard: compute the owned tasks of each sharded call, record their slots
  replay    ///< the merge: load every slot of each sharded call from the shards
};

/// What a sharded or merging run carries through the study (context::shard).
struct shard_state {
  /// Compute (a shard) or replay (the merge).
  shard_mode mode = shard_mode::compute;
  /// Which shard (all of them in the merge: the spec is not used).
  shard_spec spec;
  /// One entry per sharded call, in call order: {"tasks": n, "results": [[i, slot], ...]}
  /// (compute: the owned tasks, recorded; replay: all n tasks in index order).
  json calls = json::array();
  /// Index of the next sharded call of the run.
  std::size_t next_call = 0;
};

/// True while the merge replays a study: shared phases whose results only feed the
/// sharded phase can be skipped.
inline bool replaying(const context& ctx) { return ctx.shard && ctx.shard->mode == shard_mode::replay; }

/// True in a shard (not the merge): after its last sharded call the study returns an
/// empty result, since the slots of the tasks of other shards are empty.
inline bool partial_run(const context& ctx) { return ctx.shard && ctx.shard->mode == shard_mode::compute; }

// ---------------------------------------------------------------------------
/// Slot codecs: exact JSON for the values studies keep per task.
/// A double as its 64-bit pattern (NaN, -0 and infinities exact).
inline json encode_slot(double v) {
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
/// Reads a double written by encode_slot(double).
inline void decode_slot(const json& j, double& v) {
  const std::uint64_t b = j.get<std::uint64_t>();
  std::memcpy(&v, &b, sizeof v);
}
/// An integer as itself.
template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0>
json encode_slot(T v) {
  return v;
}
/// Reads an integer written by encode_slot().
template <class T, std::enable_if_t<std::is_integral<T>::value, int> = 0>
void decode_slot(const json& j, T& v) {
  v = j.get<T>();
}
/// A string as itself.
inline json encode_slot(const std::string& s) { return s; }
/// Reads a string written by encode_slot().
inline void decode_slot(const json& j, std::string& s) { s = j.get<std::string>(); }
/// A cell as ["i", integer], ["r", double bits] or ["s", text].
inline json encode_slot(const cell& c) {
  switch (c.k) {
    case cell::kind::integer: return json::array({"i", c.i});
    case cell::kind::real: return json::array({"r", encode_slot(c.d)});
    case cell::kind::text: break;
  }
  return json::array({"s", c.s});
}
/// Reads a cell written by encode_slot(const cell&).
/// \throws std::runtime_error for an unknown kind tag.
inline void decode_slot(const json& j, cell& c) {
  const std::string k = j.at(0).get<std::string>();
  if (k == "i")
    c = cell(j.at(1).get<long long>());
  else if (k == "r") {
    double d = 0;
    decode_slot(j.at(1), d);
    c = cell(d);
  } else if (k == "s")
    c = cell(j.at(1).get<std::string>());
  else
    throw std::runtime_error("partial result: unknown cell kind '" + k + "'");
}
/// A vector as a JSON array of its encoded elements.
template <class T>
json encode_slot(const std::vector<T>& v) {
  json a = json::array();
  for (const auto& x : v) a.push_back(encode_slot(x));
  return a;
}
/// Reads a vector written by encode_slot(const std::vector<T>&).
template <class T>
void decode_slot(const json& j, std::vector<T>& v) {
  v.assign(j.size(), T{});
  for (std::size_t i = 0; i < v.size(); ++i) decode_slot(j.at(i), v[i]);
}

// ---------------------------------------------------------------------------
/// run_tasks for a study's main phase: in a plain run it is run_tasks; in a shard it runs
/// only the owned tasks and then records save(i) (a json) for each of them, in index
/// order; in the merge it runs nothing and calls load(i, slot) for every task.
/// \throws usage_error in the merge if the recorded call does not match n tasks; any
///         exception of fn as run_tasks().
template <class Fn, class Save, class Load>
void run_sharded_tasks(const context& ctx, std::size_t n, const std::vector<double>& cost, Fn&& fn, Save&& save,
                       Load&& load) {
  if (!ctx.shard) {
    run_tasks(n, cost, ctx.threads, ctx.prog, fn);
    return;
  }
  shard_state& st = *ctx.shard;
  const std::size_t call = st.next_call++;
  if (st.mode == shard_mode::replay) {
    if (call >= st.calls.size() || st.calls[call].at("tasks").get<std::size_t>() != n ||
        st.calls[call].at("results").size() != n)
      throw usage_error("the partial results do not match the tasks of this study (made by another kvq build?)");
    const json& res = st.calls[call]["results"];
    for (std::size_t i = 0; i < n; ++i) load(i, res[i].at(1));
    return;
  }
  std::vector<std::size_t> mine;
  std::vector<double> mine_cost;
  for (std::size_t i = 0; i < n; ++i)
    if (st.spec.owns(i)) {
      mine.push_back(i);
      if (cost.size() == n) mine_cost.push_back(cost[i]);
    }
  run_tasks(mine.size(), mine_cost, ctx.threads, ctx.prog, [&](std::size_t k) { fn(mine[k]); });
  json rec = json::array();
  for (std::size_t i : mine) rec.push_back(json::array({i, save(i)}));
  st.calls.push_back(json{{"tasks", n}, {"results", std::move(rec)}});
}

}  // namespace kvq::study
