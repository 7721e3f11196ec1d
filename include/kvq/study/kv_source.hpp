/// \file
/// kvq/study/kv_source.hpp — where a study's Q/K/V come from: kvq's synthetic generator
/// (kvq::inject::generate_qkv), or, with --kv FILE, one head captured from a real model
/// (kvq/study/kv_file.hpp; docs/kv-input.md). Each study calls study_qkv() in place of
/// generate_qkv(), keys_seen() for the key count of each query, kv_treated() before it
/// applies a synthetic treatment, and record_qkv_source() for its JSON setup, so a study
/// changes in one place.
#pragma once

#include <kvq/inject/generate.hpp>
#include <kvq/study/json.hpp>
#include <kvq/study/kv_file.hpp>
#include <kvq/study/study.hpp>

#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvq::study::lab {

/// Q/K/V for qc: generated, or the captured head. With --kv the command line has set
/// qc's sizes from the file (tokens = captured tokens, head_dim = captured head_dim,
/// queries <= tokens - 1): all qc.tokens keys and values, and the LAST qc.queries
/// captured query rows (positions tokens - queries .. tokens - 1), so that under causal
/// attention every query sees a long prefix (and at least 2 keys). query_positions holds
/// those captured positions (one KV head, q_per_kv 1).
inline kvq::inject::qkv study_qkv(const context& ctx, const kvq::inject::qkv_config& qc) {
  if (!ctx.kv) return kvq::inject::generate_qkv(qc);
  const kv_head& h = *ctx.kv;
  if (qc.head_dim != h.head_dim || qc.tokens != h.tokens || qc.queries + 1 > h.tokens || qc.queries == 0)
    throw std::logic_error("study_qkv: the grid does not fit the captured head (" + std::to_string(h.tokens) +
                           " tokens, head_dim " + std::to_string(h.head_dim) + ")");
  const auto nq = static_cast<Eigen::Index>(qc.queries);
  kvq::inject::qkv r;
  r.q.push_back(h.q.bottomRows(nq));
  r.k.push_back(h.k);
  r.v.push_back(h.v);
  r.query_positions.resize(qc.queries);
  std::iota(r.query_positions.begin(), r.query_positions.end(), h.tokens - qc.queries);
  return r;
}

/// The keys query row q attends to in a context of n tokens (`positions`: the
/// query_positions of study_qkv's result): with --kv and causal attention (the default)
/// its captured position + 1 (keys 0..p), otherwise all n. The studies pass it to
/// run_prefix; keys_seen == n is run() bit for bit, so the synthetic studies are unchanged.
inline std::size_t keys_seen(const context& ctx, const std::vector<std::size_t>& positions, std::size_t q,
                             std::size_t n) {
  if (!ctx.kv || !ctx.kv->request.causal) return n;
  const std::size_t k = positions.at(q) + 1;
  return k < n ? k : n;
}

/// Whether the study applies its synthetic treatments (injected outliers or sinks, query
/// zeroing): always on generated data; on a captured head only with --kv-treatments.
inline bool kv_treated(const context& ctx) { return !ctx.kv || ctx.kv->request.treatments; }

/// The setup's "q_k_v" entry: the synthetic description, or what was read; with --kv
/// also "kv_input" (file, layer, head, shapes, dtype, the file's metadata, the query rows
/// used, whether attention was causal, and `treatments`: what the study changed in the
/// captured head, an empty list for none).
inline void record_qkv_source(const context& ctx, json& setup, const std::string& synthetic, std::size_t queries,
                              const json& treatments = json::array()) {
  if (!ctx.kv) {
    setup["q_k_v"] = synthetic;
    return;
  }
  const kv_head& h = *ctx.kv;
  const bool causal = h.request.causal;
  setup["q_k_v"] = "captured: layer " + std::to_string(h.request.layer) + ", query head " +
                   std::to_string(h.request.head) + " (K/V head " + std::to_string(h.kv_head_index) + ") of " +
                   h.request.path + "; all " + std::to_string(h.tokens) + " tokens as keys/values, the last " +
                   std::to_string(queries) + " captured queries (positions " + std::to_string(h.tokens - queries) +
                   " to " + std::to_string(h.tokens - 1) + "); " +
                   (causal ? "causal attention (a query at position p sees keys 0..p)"
                           : "attention over all keys (--non-causal)") +
                   (treatments.empty() ? "; the model's own Q/K/V, no synthetic treatment" : "; synthetic treatments applied");
  json j = h.describe();
  j["queries_used"] = queries;
  json rows = json::array();
  for (std::size_t i = 0; i < queries; ++i) rows.push_back(h.tokens - queries + i);
  j["query_rows"] = rows;
  j["causal"] = causal;
  j["treatments"] = treatments;
  setup["kv_input"] = j;
}

}  // namespace kvq::study::lab
