/// \file
/// kvq/study/kv_source.hpp — where a study's Q/K/V come from: kvq's synthetic generator
/// (kvq::inject::generate_qkv), or, with --kv FILE, one head captured from a real model
/// (kvq/study/kv_file.hpp; docs/kv-input.md). Each study calls study_qkv() in place of
/// generate_qkv() and record_qkv_source() for its JSON setup, so a study changes in one
/// place; the injectors (outliers, ...) then apply on top of either.
#pragma once

#include <kvq/inject/generate.hpp>
#include <kvq/study/json.hpp>
#include <kvq/study/kv_file.hpp>
#include <kvq/study/study.hpp>

#include <numeric>
#include <stdexcept>
#include <string>

namespace kvq::study::lab {

/// Q/K/V for qc: generated, or the captured head. With --kv the command line has set
/// qc's sizes from the file (tokens = captured tokens, head_dim = captured head_dim,
/// queries <= tokens): the first qc.queries captured query rows and the first qc.tokens
/// keys and values are used (one KV head, q_per_kv 1).
inline kvq::inject::qkv study_qkv(const context& ctx, const kvq::inject::qkv_config& qc) {
  if (!ctx.kv) return kvq::inject::generate_qkv(qc);
  const kv_head& h = *ctx.kv;
  if (qc.head_dim != h.head_dim || qc.tokens > h.tokens || qc.queries > h.tokens)
    throw std::logic_error("study_qkv: the grid does not fit the captured head (" + std::to_string(h.tokens) +
                           " tokens, head_dim " + std::to_string(h.head_dim) + ")");
  kvq::inject::qkv r;
  r.q.push_back(h.q.topRows(static_cast<Eigen::Index>(qc.queries)));
  r.k.push_back(h.k.topRows(static_cast<Eigen::Index>(qc.tokens)));
  r.v.push_back(h.v.topRows(static_cast<Eigen::Index>(qc.tokens)));
  r.query_positions.resize(qc.queries);
  std::iota(r.query_positions.begin(), r.query_positions.end(), std::size_t{0});  // the capture's own positions
  return r;
}

/// The setup's "q_k_v" entry: the synthetic description, or what was read; with --kv
/// also "kv_input" (file, layer, head, shapes, dtype, the file's metadata).
inline void record_qkv_source(const context& ctx, json& setup, const std::string& synthetic, std::size_t queries) {
  if (!ctx.kv) {
    setup["q_k_v"] = synthetic;
    return;
  }
  const kv_head& h = *ctx.kv;
  setup["q_k_v"] = "captured: layer " + std::to_string(h.request.layer) + ", query head " +
                   std::to_string(h.request.head) + " (K/V head " + std::to_string(h.kv_head_index) + ") of " +
                   h.request.path + "; all " + std::to_string(h.tokens) + " tokens as keys/values, the first " +
                   std::to_string(queries) + " captured queries; attention over all keys (not causal)";
  json j = h.describe();
  j["queries_used"] = queries;
  setup["kv_input"] = j;
}

}  // namespace kvq::study::lab
