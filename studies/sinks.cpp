// studies/sinks.cpp — attention sinks under low-precision KV storage and FP8 attention.
//
// Question (seed article 1): sinks concentrate attention mass; does a low-precision
// cache or FP8 attention math lose the *rest* of the distribution, and does keeping the
// sink tokens at full precision (IntactKV-style) help?
//
// Setup, per (context n, sink count s, sink-rest logit gap Delta), one head:
//   kvq::inject::build_scenario: Gaussian Q/K/V, RoPE (base 10^4), massive activations of
//   `massive` x median|K| on 2 key channels of the sink tokens (queries neutralized on
//   those channels, so they change scales but not logits: Sun et al. 2024), and s sinks
//   whose logits exceed the background mean by exactly Delta (StreamingLLM).
// Paths (the emulated side; the reference is double attention on the original K/V):
//   <scheme>        storage-only: K/V through the scheme (kvq/study/schemes.hpp), fp32 math;
//   fa3_s1_fwd ...  FlashAttention-3 FP8 forward (kvq::attention::fa3_fp8_attention):
//                   Q/K/V in e4m3 (descale 1), P scaled by S = 1 or 256 and cast to e4m3,
//                   KV blocks of 128 tokens first-to-last (fwd) or last-to-first (rev, FA3).
// keep_sinks = 1 (IntactKV): the sink tokens' K/V stay in bf16; for storage paths the
//   scheme quantizes only tokens s..n-1 (its scales never see the sinks); for FA3 the sink
//   rows enter the kernel unquantized while P is still cast to FP8.
// With --kv FILE (docs/kv-input.md) the captured head replaces the Gaussian Q/K/V and no
// synthetic RoPE is applied; the queries are the last captured positions and attention is
// causal (--non-causal: all keys). The first `sinks` captured tokens are the sinks as
// they are (a model's own sinks): deltas and massive are fixed at 0 and nothing is
// injected, unless --kv-treatments asks for the massive activations and sinks on top.
// gap_achieved is then measured over the keys each query sees.
#include "studies.hpp"

#include <kvq/study.hpp>
#include <kvq/study/kv_source.hpp>
#include <kvq/study/lab.hpp>
#include <kvq/study/schemes.hpp>

#include <kvq/attention/kernels.hpp>
#include <kvq/core/float16.hpp>
#include <kvq/core/reduce.hpp>
#include <kvq/attention/variants.hpp>
#include <kvq/inject/patterns.hpp>
#include <kvq/inject/scenario.hpp>
#include <kvq/metrics.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace kvq::study::sinks {

using kvq::matrix_f;

struct fa3_path {
  const char* name;
  int max_offset;  // S = 2^max_offset
  bool reverse;
};
inline const std::vector<fa3_path>& fa3_paths() {
  static const std::vector<fa3_path> v = {
      {"fa3_s1_fwd", 0, false}, {"fa3_s1_rev", 0, true}, {"fa3_s256_fwd", 8, false}, {"fa3_s256_rev", 8, true}};
  return v;
}
inline const fa3_path* find_fa3(const std::string& n) {
  for (const auto& p : fa3_paths())
    if (n == p.name) return &p;
  return nullptr;
}

inline std::vector<std::string> path_names() {
  std::vector<std::string> v = scheme_names();
  for (const auto& p : fa3_paths()) v.push_back(p.name);
  return v;
}

// The paths parameter: FA3 paths by their names, storage schemes by any registry
// spelling (recorded canonical).
inline param paths_param(std::string full_default) {
  return param{"paths", param_kind::name_list, std::move(full_default), "", "emulated paths", path_names(), 0, 0, "path"};
}

// gap_achieved on a captured head: per query, the mean logit q.k/sqrt(d) of the s sinks
// minus that of the other keys it sees (s..p causal, s..n-1 otherwise), in double with
// tree sums; the mean over the queries.
inline double seen_gap(const context& ctx, const matrix_f& Q, const matrix_f& K, const std::vector<std::size_t>& pos,
                       std::size_t s) {
  const std::size_t d = static_cast<std::size_t>(K.cols()), n = static_cast<std::size_t>(K.rows());
  reduce::tree_accumulator<double> over_queries;
  for (std::size_t q = 0; q < pos.size(); ++q) {
    const std::size_t keys = lab::keys_seen(ctx, pos, q, n);
    const float* qr = &Q(static_cast<Eigen::Index>(q), 0);
    reduce::tree_accumulator<double> sink, rest;
    for (std::size_t t = 0; t < keys; ++t)
      (t < s ? sink : rest).push(kvq::inject::detail::logit(qr, &K(static_cast<Eigen::Index>(t), 0), d));
    over_queries.push(sink.result() / double(s) - rest.result() / double(keys - s));
  }
  return over_queries.result() / double(pos.size());
}

inline table output_schema() {
  table t;
  t.title = "Sinks: distortion per path, sink count, logit gap and context (means over queries)";
  t.columns = {{"path", "storage scheme, or fa3_s{1,256}_{fwd,rev}: FA3 FP8 attention with P scale S and KV order"},
               {"keep_sinks", "1: sink tokens kept in bf16 (IntactKV-style), 0: quantized with the rest"},
               {"sinks", "number of sink tokens"},
               {"delta", "sink logit minus mean background logit (requested)"},
               {"context", "context length in tokens"},
               {"queries", "queries averaged", false}};
  for (const auto& c : lab::query_metric_columns()) {
    const std::string n = c.first;
    bool brief = n == "weighted_tau" || n == "recall_at_8" || n == "kl" || n == "p_underflow";
    t.columns.push_back({c.first, c.second, brief});
  }
  t.columns.push_back({"nonfinite_queries", "queries with a NaN/Inf output or infinite KL (not averaged in)", false});
  t.columns.push_back({"nonsink_underflow", "fraction of non-sink keys with p > 0 whose emulated weight is 0"});
  t.columns.push_back({"sink_mass_ref", "reference attention mass on the sinks", false});
  t.columns.push_back({"sink_mass_emu", "emulated attention mass on the sinks"});
  t.columns.push_back({"gap_achieved", "measured mean sink logit minus mean background logit", false});
  return t;
}

study_def definition() {
  study_def d;
  d.name = "sinks";
  d.summary = "sink count x logit gap x path (storage schemes, FA3 FP8 attention S=1/256 fwd/rev), with/without IntactKV";
  d.description =
      "Sinks (the first tokens, aligned with every query so their logit exceeds the rest by Delta, carrying\n"
      "massive activations) are run through each storage scheme and through FlashAttention-3's FP8 forward\n"
      "(P scaled by S = 1 or 256 before the e4m3 cast; KV blocks forward or reverse), with the sinks either\n"
      "quantized like the rest or kept in bf16 (IntactKV). Reports the rank/distribution metrics, the share of\n"
      "non-sink keys whose weight underflows to exactly 0, and the attention mass left on the sinks.\n"
      "With --kv FILE: the model's own Q/K/V (queries: the last captured positions), causal attention, and\n"
      "the first `sinks` captured tokens as the sinks, nothing injected (--deltas and --massive fixed at 0);\n"
      "--kv-treatments injects the massive activations and the sinks with gap Delta on top; --non-causal: all\n"
      "keys. gap_achieved is measured over the keys each query sees.";
  std::vector<std::string> def_paths = {"bf16",     "fp8_e4m3",    "fp8_e4m3_cal", "fp8_per_token_head",
                                        "nvfp4_te", "mxfp4_rceil", "kivi_int4",    "fa3_s1_fwd",
                                        "fa3_s1_rev", "fa3_s256_fwd", "fa3_s256_rev"};
  d.params = {
      paths_param(join(def_paths, ",")),
      {"sinks", param_kind::int_list, "1,4", "4", "sink token counts", {}, 1, 1 << 20, "sink count"},
      {"deltas", param_kind::real_list, "0,4,8,12", "0,10", "sink-rest logit gaps Delta", {}, -100, 100,
       "logit gap"},
      {"contexts", param_kind::int_list, "4k,32k", "2k", "context lengths in tokens", {}, 2, 1 << 22,
       "context length"},
      {"massive", param_kind::real, "100", "", "massive-activation factor on the sink keys (x median|K|; 0 = none)",
       {}, 0, 1e6, "massive-activation factor"},
      {"head-dim", param_kind::integer, "128", "", "head dimension d (even; >= 4 with massive activations)", {}, 2,
       4096, "head dimension"},
      {"queries", param_kind::integer, "8", "4", "queries per cell", {}, 1, 1 << 20, "query count"},
  };
  d.outputs = {output_schema()};
  d.kv.accepted = true;
  d.kv.treatment_params = {{"deltas", "0"}, {"massive", "0"}};
  d.kv.validate = [](const config& c, const kv_head& kv) {
    // Causal: the earliest query (the last `queries` positions) must see a key past the
    // sinks, or it has no background to measure the sinks against.
    if (!kv.request.causal) return;
    const long long first = static_cast<long long>(kv.tokens) - c.integer("queries");
    const long long smax = *std::max_element(c.ints("sinks").begin(), c.ints("sinks").end());
    if (first < smax)
      throw usage_error("--sinks " + std::to_string(smax) + ": the first query (captured position " +
                        std::to_string(first) + ") sees no key past the sinks under causal attention (allowed: "
                        "sinks <= " + std::to_string(first) + ", fewer --queries, or --non-causal)");
  };
  d.validate = [](const config& c) {
    std::vector<std::string> storage;
    for (const auto& p : c.names("paths"))
      if (!find_fa3(p)) storage.push_back(p);
    check_head_dim(storage, c.integer("head-dim"));
    // RoPE rotates channel pairs; the massive activation takes 2 channels, which the
    // sink direction avoids, so one pair must stay free (kvq::inject::inject_sinks fails
    // on a zero-norm direction).
    if (c.integer("head-dim") % 2 != 0)
      throw usage_error("--head-dim " + std::to_string(c.integer("head-dim")) +
                        " is odd (allowed: even head dimensions; RoPE rotates channel pairs)");
    if (c.real("massive") > 0 && c.integer("head-dim") < 4)
      throw usage_error("--head-dim " + std::to_string(c.integer("head-dim")) +
                        " is too small: the 2 massive-activation channels leave none for the sink direction "
                        "(allowed: even head dimensions >= 4, or --massive 0)");
    const long long smax = *std::max_element(c.ints("sinks").begin(), c.ints("sinks").end());
    const long long nmin = *std::min_element(c.ints("contexts").begin(), c.ints("contexts").end());
    if (smax >= nmin)
      throw usage_error("--sinks " + std::to_string(smax) + " is not below the shortest context " +
                        std::to_string(nmin) + " (allowed: 1 to context-1 sink tokens)");
  };
  d.run = [](const context& ctx) {
    const config& cfg = ctx.cfg;
    const auto& paths = cfg.names("paths");
    const auto& sinks = cfg.ints("sinks");
    const auto& deltas = cfg.reals("deltas");
    const auto& ctxs = cfg.ints("contexts");
    const std::size_t hd = static_cast<std::size_t>(cfg.integer("head-dim"));
    const std::size_t nq = static_cast<std::size_t>(cfg.integer("queries"));
    const double massive = cfg.real("massive");
    const std::size_t NC = ctxs.size(), NS = sinks.size(), ND = deltas.size(), NP = paths.size();
    const std::size_t ncell = NC * NS * ND;

    // Phase 1: one scenario and its reference attention per (context, sinks, delta).
    struct scenario_cell {
      matrix_f K, V, Q;
      std::vector<std::size_t> positions;  // the queries' positions (captured ones with --kv)
      std::size_t sinks = 0;
      double gap = 0;
      std::vector<std::vector<double>> p, o;
    };
    std::vector<scenario_cell> cells(ncell);
    const bool treat = lab::kv_treated(ctx);
    double total = 0;
    for (std::size_t i = 0; i < ncell; ++i) total += double(ctxs[i / (NS * ND)]) * (1.0 + 2.0 * double(NP));
    if (ctx.prog) ctx.prog->plan(total);
    // Phase 2 reads every scenario: a --shard run builds all of them, the merge none.
    if (!replaying(ctx)) {
      std::vector<double> cost(ncell);
      for (std::size_t i = 0; i < ncell; ++i) cost[i] = double(ctxs[i / (NS * ND)]);
      run_tasks(ncell, cost, ctx.threads, ctx.prog, [&](std::size_t i) {
        const std::size_t n = static_cast<std::size_t>(ctxs[i / (NS * ND)]);
        const std::size_t s = static_cast<std::size_t>(sinks[(i / ND) % NS]);
        const double delta = deltas[i % ND];
        kvq::inject::scenario_config sc;
        sc.shape.tokens = n;
        sc.shape.queries = nq;
        sc.shape.head_dim = hd;
        sc.shape.seed = cfg.seed;
        if (massive > 0) {
          kvq::inject::massive_activation_config mc;
          mc.tokens.clear();
          for (std::size_t t = 0; t < s; ++t) mc.tokens.push_back(t);
          mc.random_count = 2;
          mc.factor = massive;
          mc.seed = cfg.seed;
          sc.massive = mc;
        }
        kvq::inject::sink_config sk;
        sk.count = s;
        sk.delta = delta;
        sk.seed = cfg.seed;
        sc.sinks = sk;
        // --kv: the captured head (already post-RoPE, or the pre-RoPE tensors as chosen)
        // takes the place of the generated Q/K/V; no synthetic RoPE is applied to it.
        // Without --kv-treatments it is used as captured: the model's own sinks.
        kvq::inject::scenario built;
        if (ctx.kv) {
          sc.rope = std::nullopt;
          if (treat) built = kvq::inject::build_scenario_on(lab::study_qkv(ctx, sc.shape), sc);
          else built.data = lab::study_qkv(ctx, sc.shape);
        } else {
          built = kvq::inject::build_scenario(sc);
        }
        scenario_cell& c = cells[i];
        c.K = std::move(built.data.k[0]);
        c.V = std::move(built.data.v[0]);
        c.Q = std::move(built.data.q[0]);
        c.positions = std::move(built.data.query_positions);
        c.sinks = s;
        if (ctx.kv) {
          c.gap = seen_gap(ctx, c.Q, c.K, c.positions, s);
        } else {
          const auto& g = built.heads[0].sinks->gap[0];
          double acc = 0;
          for (double x : g) acc += x;
          c.gap = acc / double(g.size());
        }
        const kvq::attention::reference_attention ref(c.K, c.V);
        kvq::attention::workspace aws;
        c.p.assign(nq, std::vector<double>(n));
        c.o.assign(nq, std::vector<double>(hd));
        for (std::size_t q = 0; q < nq; ++q)
          ref.run_prefix(&c.Q(static_cast<Eigen::Index>(q), 0), lab::keys_seen(ctx, c.positions, q, n), c.p[q].data(),
                         c.o[q].data(), aws);
      });
    }

    // Phase 2: every (cell, path), with and without IntactKV.
    std::vector<std::vector<cell>> rows(ncell * NP * 2);
    {
      std::vector<double> cost(ncell * NP);
      for (std::size_t i = 0; i < cost.size(); ++i) cost[i] = 2.0 * double(ctxs[(i / NP) / (NS * ND)]);
      run_sharded_tasks(ctx, cost.size(), cost, [&](std::size_t ti) {
        const std::size_t ci = ti / NP, pi = ti % NP;
        const scenario_cell& c = cells[ci];
        const std::size_t n = static_cast<std::size_t>(c.K.rows()), s = c.sinks;
        const std::string& path = paths[pi];
        std::vector<std::size_t> sink_tokens;
        for (std::size_t t = 0; t < s; ++t) sink_tokens.push_back(t);
        std::vector<double> p(n);
        std::vector<float> o(hd);
        kvq::attention::workspace aws;
        kvq::metrics::workspace ws(n);
        for (int keep = 0; keep < 2; ++keep) {
          std::vector<lab::query_metrics> qm;
          std::vector<double> under, smass_ref, smass_emu;
          auto keys_of = [&](std::size_t q) { return lab::keys_seen(ctx, c.positions, q, n); };
          auto score = [&](std::size_t q) {
            const std::size_t keys = keys_of(q);
            qm.push_back(lab::evaluate(c.p[q].data(), p.data(), keys, c.o[q].data(), o.data(), hd, ws));
            std::size_t el = 0, z = 0;
            for (std::size_t t = s; t < keys; ++t)
              if (c.p[q][t] > 0) {
                ++el;
                z += p[t] == 0.0;
              }
            under.push_back(el ? double(z) / double(el) : 0.0);
            const auto nm = kvq::metrics::needle_metrics(c.p[q].data(), p.data(), keys, sink_tokens);
            smass_ref.push_back(nm.mass_reference);
            smass_emu.push_back(nm.mass_emulated);
          };
          if (const fa3_path* fp = find_fa3(path)) {
            kvq::attention::fa3_options fo;
            fo.max_offset = fp->max_offset;
            fo.reverse = fp->reverse;
            const kvq::attention::fa3_fp8_attention<> att(c.K, c.V, fo);
            if (!keep) {
              for (std::size_t q = 0; q < nq; ++q) {
                att.run_prefix(&c.Q(static_cast<Eigen::Index>(q), 0), keys_of(q), p.data(), o.data(), aws);
                score(q);
              }
            } else {
              // IntactKV with FP8 attention: the sink rows enter the kernel in bf16, the
              // other rows as FP8 values; P is still scaled and cast to FP8.
              matrix_f Kk = att.keys(), Vk = att.values();
              for (std::size_t t = 0; t < s; ++t)
                for (std::size_t j = 0; j < hd; ++j) {
                  const auto r = static_cast<Eigen::Index>(t), cc = static_cast<Eigen::Index>(j);
                  Kk(r, cc) = kvq::round_bf16(c.K(r, cc));
                  Vk(r, cc) = kvq::round_bf16(c.V(r, cc));
                }
              std::vector<float> scratch(kvq::attention::fa3_scratch(n, hd, att.config().block_n)), qq(hd);
              for (std::size_t q = 0; q < nq; ++q) {
                // The rows this query sees (all n unless causal on a captured head).
                const std::size_t keys = keys_of(q);
                const kvq::attention::rows_view<float> kv{Kk.data(), keys, hd, hd}, vv{Vk.data(), keys, hd, hd};
                for (std::size_t j = 0; j < hd; ++j)
                  qq[j] = kvq::decode<kvq::fmt::e4m3>(
                      kvq::encode<kvq::fmt::e4m3>(c.Q(static_cast<Eigen::Index>(q), static_cast<Eigen::Index>(j))));
                kvq::attention::fa3_query<kvq::fmt::e4m3>(qq.data(), kv, vv, att.config(), p.data(), o.data(),
                                                           scratch.data());
                score(q);
              }
            }
          } else {
            const scheme_spec& sc = scheme_named(path);
            kvq::attention::storage_options so;
            if (!keep) {
              so.codec = kvq::attention::codec_of(sc);
            } else {
              // The low-precision cache holds tokens s..n-1 only; the sinks stay bf16.
              auto split = [&sc, s](kv_role role) {
                return [&sc, s, role](const matrix_f& m) {
                  const std::size_t nr = static_cast<std::size_t>(m.rows()), nc = static_cast<std::size_t>(m.cols());
                  matrix_f r(m.rows(), m.cols());
                  for (std::size_t i = 0; i < s * nc; ++i) r.data()[i] = kvq::round_bf16(m.data()[i]);
                  sc.round_trip(role, m.data() + s * nc, r.data() + s * nc, nr - s, nc);
                  return r;
                };
              };
              so.codec = kvq::attention::kv_codec{split(kv_role::key), split(kv_role::value), sc.name + "+intact"};
            }
            const kvq::attention::storage_attention att(c.K, c.V, so);
            for (std::size_t q = 0; q < nq; ++q) {
              att.run_prefix(&c.Q(static_cast<Eigen::Index>(q), 0), keys_of(q), p.data(), o.data(), aws);
              score(q);
            }
          }
          const lab::metric_means mm = lab::mean_over(qm);
          auto mean = [](const std::vector<double>& v) {
            return kvq::metrics::aggregate(v.data(), v.size(), kvq::metrics::better::lower, {}).mean;
          };
          const std::size_t si = (ci / ND) % NS, di = ci % ND, cxi = ci / (NS * ND);
          std::vector<cell> row = {path, keep, sinks[si], deltas[di], ctxs[cxi], static_cast<long long>(nq)};
          for (double v : mm.mean) row.emplace_back(v);
          row.emplace_back(static_cast<long long>(mm.nonfinite));
          row.emplace_back(mean(under));
          row.emplace_back(mean(smass_ref));
          row.emplace_back(mean(smass_emu));
          row.emplace_back(c.gap);
          rows[ti * 2 + static_cast<std::size_t>(keep)] = std::move(row);
        }
      }, [&](std::size_t ti) { return json::array({encode_slot(rows[ti * 2]), encode_slot(rows[ti * 2 + 1])}); },
         [&](std::size_t ti, const json& a) {
        decode_slot(a.at(0), rows[ti * 2]);
        decode_slot(a.at(1), rows[ti * 2 + 1]);
      });
    }
    if (partial_run(ctx)) return result{};  // a shard: the other shards' rows are not here

    result r;
    table t = output_schema();
    // Order: path, keep, sinks, delta, context.
    for (std::size_t pi = 0; pi < NP; ++pi)
      for (std::size_t keep = 0; keep < 2; ++keep)
        for (std::size_t si = 0; si < NS; ++si)
          for (std::size_t di = 0; di < ND; ++di)
            for (std::size_t cxi = 0; cxi < NC; ++cxi) {
              const std::size_t ci = (cxi * NS + si) * ND + di;
              t.rows.push_back(rows[(ci * NP + pi) * 2 + keep]);
            }
    r.tables.push_back(t);

    r.setup["head_dim"] = (static_cast<long long>(hd));
    r.setup["queries_per_cell"] = (static_cast<long long>(nq));
    r.setup["scenario"] = ("kvq::inject::build_scenario: N(0,1) Q/K/V, RoPE base 1e4, massive activations on the sink keys "
                "(2 channels, factor x median|K|, queries neutralized there), sinks with logit gap Delta");
    if (ctx.kv) {  // the captured head replaces the N(0,1) Q/K/V and the RoPE
      json treatments = json::array();
      if (treat) {
        r.setup["scenario"] = "kvq::inject::build_scenario_on the captured Q/K/V (no synthetic RoPE): massive activations on "
                              "the sink keys (2 channels, factor x median|K|, queries neutralized there), sinks with logit gap Delta";
        if (massive > 0) treatments.push_back("massive activations on the sink keys (2 channels, queries neutralized there)");
        treatments.push_back("sinks with logit gap Delta (deltas)");
      } else {
        r.setup["scenario"] = "the captured Q/K/V as they are (no synthetic RoPE, nothing injected): the first `sinks` "
                              "captured tokens are the sinks";
      }
      r.setup["gap_achieved"] = "mean over queries of (mean sink logit - mean logit of the other keys the query sees)";
      lab::record_qkv_source(ctx, r.setup, "", nq, treatments);
    }
    r.setup["massive_factor"] = (massive);
    r.setup["reference"] = ("double attention on the original K/V");
    r.setup["storage_paths"] = ("K/V through the scheme, fp32 math (kvq::attention::storage_attention)");
    r.setup["fa3_paths"] = ("kvq::attention::fa3_fp8_attention: e4m3 Q/K/V (descale 1), P x S cast to e4m3, 128-token KV blocks");
    r.setup["keep_sinks"] = ("sink K/V in bf16; storage schemes quantize tokens s..n-1 only");

    // Findings.
    const std::size_t c_under = column_index(t, "nonsink_underflow"), c_w = column_index(t, "weighted_tau");
    const double dmax = *std::max_element(deltas.begin(), deltas.end());
    const double dmin = *std::min_element(deltas.begin(), deltas.end());
    const long long nbig = *std::max_element(ctxs.begin(), ctxs.end());
    const long long sbig = *std::max_element(sinks.begin(), sinks.end());
    auto get = [&](const std::string& path, int keep, double delta) -> const std::vector<cell>* {
      for (const auto& row : t.rows)
        if (row[0].s == path && row[1].i == keep && row[2].i == sbig && row[3].d == delta && row[4].i == nbig)
          return &row;
      return nullptr;
    };
    {
      std::string line = "non-sink keys whose weight underflows to 0, Delta " + term_cell(cell(dmin)) + " -> " +
                         term_cell(cell(dmax)) + " (" + std::to_string(sbig) + " sinks, n=" + std::to_string(nbig) +
                         "): ";
      bool first = true;
      for (const auto& path : paths) {
        auto* a = get(path, 0, dmin);
        auto* b = get(path, 0, dmax);
        if (!a || !b) continue;
        char buf[128];
        std::snprintf(buf, sizeof buf, "%s%s %.2f%% -> %.2f%%", first ? "" : ", ", path.c_str(),
                      100 * (*a)[c_under].d, 100 * (*b)[c_under].d);
        line += buf;
        first = false;
      }
      r.findings.push_back(line);
    }
    {
      std::string line = "weighted tau at Delta " + term_cell(cell(dmax)) + ", quantized sinks vs IntactKV: ";
      bool first = true;
      for (const auto& path : paths) {
        auto* a = get(path, 0, dmax);
        auto* b = get(path, 1, dmax);
        if (!a || !b) continue;
        char buf[128];
        std::snprintf(buf, sizeof buf, "%s%s %.4f vs %.4f", first ? "" : ", ", path.c_str(), (*a)[c_w].d,
                      (*b)[c_w].d);
        line += buf;
        first = false;
      }
      r.findings.push_back(line);
    }
    return r;
  };
  return d;
}

}  // namespace kvq::study::sinks
