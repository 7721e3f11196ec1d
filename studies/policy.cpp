// studies/policy.cpp — the tiered KV cache the seed articles recommend, against uniform
// schemes: memory versus distortion.
//
// Question (seed article 1, "practical resolution"): keep what matters at high precision
// (attention sinks, citation spans, the recent window) and store the rest in NVFP4/FP8;
// how much memory does that cost, and how much distortion does it save?
//
// Setup per context n (one layer, one KV head, head_dim d): the citation scenario of
// studies/citations.cpp (RoPE, key channel outliers, a massive-activation sink at token
// 0, one citation span per query). Each policy is a kvq::kv::precision_policy stored in a
// kvq::kv::layer_cache (prefill in one chunk; tensor scales calibrated from it and frozen,
// as vLLM does):
//   uniform:<f>                   every token in format f;
//   tiered:<f>+sinks              the first `sinks` tokens in bf16, the rest in f;
//   tiered:<f>+sinks+window       ... and the most recent `window` tokens in bf16;
//   tiered:<f>+sinks+window+spans ... and every citation span in bf16 (flagged spans).
// Memory is the cache's own byte count (codes, scales, zero points, bf16 rows, tensor
// values). Attention: double reference on the original K/V vs fp32 attention on the
// cache's dequantized K/V (kvq::attention). The frontier marks the policies no other
// policy beats on both bits per value and mean KL at the same context.
#include "studies.hpp"

#include <kvq/study.hpp>
#include <kvq/study/citation_scenario.hpp>
#include <kvq/study/lab.hpp>
#include <kvq/study/stats.hpp>

#include <kvq/attention/variants.hpp>
#include <kvq/inject/scenario.hpp>
#include <kvq/kv/cache.hpp>
#include <kvq/metrics.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace kvq::study::policy {

using kvq::matrix_f;

// The cache policy of a registry scheme (the scheme must have a kvq storage format).
inline kvq::kv::precision_policy policy_of(const std::string& name) {
  try {
    return kvq::kv::uniform_policy(kvq::kv::find_scheme(name));
  } catch (const std::invalid_argument& e) {
    throw usage_error(e.what());
  }
}

struct policy_def {
  std::string name, low, tier;  // tier: uniform, sinks, sinks+window, sinks+window+spans
  kvq::kv::precision_policy p;
};

inline std::vector<policy_def> make_policies(const config& c, const std::vector<kvq::kv::token_span>& spans) {
  std::vector<policy_def> v;
  for (const auto& f : c.names("uniform"))
    v.push_back({"uniform:" + f, f, "uniform", policy_of(f)});
  const std::size_t sinks = static_cast<std::size_t>(c.integer("sinks"));
  const std::size_t window = static_cast<std::size_t>(c.integer("window"));
  for (const auto& f : c.names("tiered")) {
    for (int tier = 0; tier < 3; ++tier) {
      kvq::kv::precision_policy p = policy_of(f);
      p.high = kvq::kv::hp_format::bf16;
      p.sink_tokens = sinks;
      std::string t = "sinks";
      if (tier >= 1) {
        p.recent_window = window;
        t += "+window";
      }
      if (tier >= 2) {
        p.keep_spans = spans;
        t += "+spans";
      }
      v.push_back({"tiered:" + f + "+" + t, f, t, p});
    }
  }
  return v;
}

inline table output_schema() {
  table t;
  t.title = "Memory vs distortion per cache policy (means over queries; frontier by bits/value and KL)";
  t.columns = {{"policy", "uniform:<format> or tiered:<format>+<what stays bf16>"},
               {"low_format", "format of the low-precision tokens", false},
               {"high_tokens", "what stays bf16: uniform, sinks, sinks+window, sinks+window+spans", false},
               {"context", "context length in tokens"},
               {"queries", "queries averaged", false},
               {"bits_per_value", "cache bytes * 8 / (2 n d): every byte of K and V, scales and bf16 rows included"},
               {"bf16_token_share", "share of tokens stored in bf16", false}};
  for (const auto& col : lab::query_metric_columns()) {
    const std::string n = col.first;
    bool brief = n == "weighted_tau" || n == "kl" || n == "recall_at_8";
    t.columns.push_back({col.first, col.second, brief});
  }
  t.columns.push_back({"nonfinite_queries", "queries with a NaN/Inf output or infinite KL (not averaged in)", false});
  t.columns.push_back({"false_citation_rate", "share of queries whose span is in the reference top-k but not the emulated"});
  t.columns.push_back({"span_mass_retained", "mean emulated / reference attention mass on the query's span"});
  t.columns.push_back({"on_frontier", "1 if no policy at this context has both fewer bits/value and lower mean KL"});
  return t;
}

study_def definition() {
  study_def d;
  d.name = "policy";
  d.summary = "tiered cache (bf16 sinks, citation spans, recent window; NVFP4/FP8 rest) vs uniform schemes: memory/distortion";
  d.description =
      "Each policy stores the same long context (citation spans, a sink, key outliers) in a kvq::kv::layer_cache;\n"
      "the cache's exact byte count gives bits per value, and attention on its dequantized K/V gives the\n"
      "distortion against the double-precision reference: rank and distribution metrics, the false-citation\n"
      "rate and the attention mass kept on each query's citation span. Policies on the memory/KL frontier are\n"
      "flagged.";
  d.params = {
      scheme_param("uniform", "bf16,fp8_e4m3_cal,fp8_per_token_head,mxfp8_e4m3_rceil,nvfp4_te,mxfp4_rceil,kivi_int4",
                   "bf16,fp8_e4m3_cal,nvfp4_te", "schemes of the uniform policies"),
      scheme_param("tiered", "nvfp4_te,mxfp4_rceil,fp8_e4m3_cal", "nvfp4_te",
                   "low-precision schemes of the tiered policies"),
      {"sinks", param_kind::integer, "4", "", "leading tokens kept in bf16 by tiered policies", {}, 0, 1 << 20,
       "sink token count"},
      {"window", param_kind::integer, "256", "", "recent tokens kept in bf16 by tiered policies", {}, 0, 1 << 24,
       "window length"},
      {"contexts", param_kind::int_list, "8k,32k", "4k", "context lengths in tokens", {}, 64, 1 << 22,
       "context length"},
      {"queries", param_kind::integer, "32", "8", "queries (one citation span each) per context", {}, 1, 1 << 16,
       "query count"},
      {"topk", param_kind::integer, "5", "", "k of the citation top-k test", {}, 1, 1 << 20, "k"},
      {"span", param_kind::integer, "4", "", "tokens per citation span", {}, 1, 1 << 10, "span length"},
      {"outlier", param_kind::real, "10", "", "key channel-outlier offset m (4 channels, pre-RoPE)", {}, 0, 1e30,
       "outlier magnitude"},
      {"sink-delta", param_kind::real, "8", "", "logit gap of the sink (token 0)", {}, -100, 100, "logit gap"},
      {"head-dim", param_kind::integer, "128", "", "head dimension d (even; >= 8, or >= 4 with --outlier 0)", {}, 4,
       4096, "head dimension"},
  };
  d.outputs = {output_schema()};
  d.validate = [](const config& c) {
    lab::check_span_grid(c);
    // The cache checks each format against head_dim (block sizes) when it is made.
    for (const auto& pd : make_policies(c, {})) {
      try {
        kvq::kv::layer_cache probe(1, static_cast<std::size_t>(c.integer("head-dim")), pd.p);
      } catch (const std::invalid_argument& e) {
        throw usage_error("policy " + pd.name + " with --head-dim " + std::to_string(c.integer("head-dim")) + ": " +
                          e.what());
      }
    }
  };
  d.run = [](const context& ctx) {
    const config& cfg = ctx.cfg;
    const auto& ctxs = cfg.ints("contexts");
    const std::size_t nq = static_cast<std::size_t>(cfg.integer("queries"));
    const std::size_t k = static_cast<std::size_t>(cfg.integer("topk"));
    const std::size_t span = static_cast<std::size_t>(cfg.integer("span"));
    const std::size_t hd = static_cast<std::size_t>(cfg.integer("head-dim"));
    const std::size_t NC = ctxs.size();
    const std::size_t NP = make_policies(cfg, {}).size();

    // Phase 1: scenario + reference per context.
    struct scen {
      matrix_f K, V, Q;
      std::vector<std::vector<std::size_t>> spans;
      std::vector<kvq::kv::token_span> all_spans;
      std::vector<std::vector<double>> p, o;
    };
    std::vector<scen> sc(NC);
    double total = 0;
    for (auto n : ctxs) total += double(n) * double(1 + NP);
    if (ctx.prog) ctx.prog->plan(total);
    // Phase 2 reads every scenario: a --shard run builds all of them, the merge none.
    if (!replaying(ctx)) {
      std::vector<double> cost(NC);
      for (std::size_t i = 0; i < NC; ++i) cost[i] = double(ctxs[i]);
      run_tasks(NC, cost, ctx.threads, ctx.prog, [&](std::size_t ci) {
        const std::size_t n = static_cast<std::size_t>(ctxs[ci]);
        const std::uint64_t seed = cfg.seed * 1000003ull;
        const kvq::inject::scenario_config s =
            lab::citation_scenario(n, nq, hd, seed, cfg.real("outlier"), cfg.real("sink-delta"), span);
        kvq::inject::scenario built = kvq::inject::build_scenario(s);
        scen& x = sc[ci];
        x.K = std::move(built.data.k[0]);
        x.V = std::move(built.data.v[0]);
        x.Q = std::move(built.data.q[0]);
        for (std::size_t q = 0; q < nq; ++q) {
          x.spans.push_back(built.needle_tokens(0, q));
          x.all_spans.push_back({x.spans.back().front(), x.spans.back().back() + 1});
        }
        const kvq::attention::reference_attention ref(x.K, x.V);
        kvq::attention::workspace aws;
        x.p.assign(nq, std::vector<double>(n));
        x.o.assign(nq, std::vector<double>(hd));
        for (std::size_t q = 0; q < nq; ++q) ref.run(&x.Q(static_cast<Eigen::Index>(q), 0), x.p[q].data(), x.o[q].data(), aws);
      });
    }

    // Phase 2: every (context, policy).
    struct outcome {
      std::vector<cell> row;
      double bits = 0, kl = 0;
    };
    std::vector<outcome> out(NC * NP);
    {
      std::vector<double> cost(NC * NP);
      for (std::size_t i = 0; i < cost.size(); ++i) cost[i] = double(ctxs[i / NP]);
      run_sharded_tasks(ctx, cost.size(), cost, [&](std::size_t ti) {
        const std::size_t ci = ti / NP, pi = ti % NP;
        const scen& x = sc[ci];
        const std::size_t n = static_cast<std::size_t>(x.K.rows());
        const policy_def pd = make_policies(cfg, x.all_spans)[pi];
        kvq::kv::layer_cache cache(1, hd, pd.p);
        kvq::kv::kv_heads kh, vh;
        kh.heads.push_back(x.K);
        vh.heads.push_back(x.V);
        cache.append(kh, vh, kvq::kv::phase::prefill);
        const kvq::kv::memory_report mem = cache.report();
        const double bits = 8.0 * double(mem.total()) / (2.0 * double(n) * double(hd));
        const double bf16_share = double(mem.high_tokens) / double(n);
        const kvq::attention::storage_attention att(cache.keys(0), cache.values(0), {});
        std::vector<double> p(n);
        std::vector<float> o(hd);
        kvq::attention::workspace aws;
        kvq::metrics::workspace ws(n);
        std::vector<lab::query_metrics> qm;
        std::size_t eligible = 0, lost = 0;
        std::vector<double> retained;
        for (std::size_t q = 0; q < nq; ++q) {
          att.run(&x.Q(static_cast<Eigen::Index>(q), 0), p.data(), o.data(), aws);
          qm.push_back(lab::evaluate(x.p[q].data(), p.data(), n, x.o[q].data(), o.data(), hd, ws));
          const std::size_t rr = lab::span_rank(x.p[q].data(), n, x.spans[q]);
          const std::size_t er = lab::span_rank(p.data(), n, x.spans[q]);
          if (rr <= k) {
            ++eligible;
            lost += er > k;
          }
          retained.push_back(kvq::metrics::needle_metrics(x.p[q].data(), p.data(), n, x.spans[q]).retained);
        }
        const lab::metric_means mm = lab::mean_over(qm);
        outcome& oc = out[ti];
        oc.bits = bits;
        oc.kl = mm.mean[6];  // "kl", the 7th of lab::query_metric_columns()
        oc.row = {pd.name, pd.low, pd.tier, ctxs[ci], static_cast<long long>(nq), bits, bf16_share};
        for (double v : mm.mean) oc.row.emplace_back(v);
        oc.row.emplace_back(static_cast<long long>(mm.nonfinite));
        oc.row.emplace_back(eligible ? double(lost) / double(eligible) : std::nan(""));
        oc.row.emplace_back(
            kvq::metrics::aggregate(retained.data(), retained.size(), kvq::metrics::better::higher, {}).mean);
      }, [&](std::size_t ti) {
        return json::array({encode_slot(out[ti].row), encode_slot(out[ti].bits), encode_slot(out[ti].kl)});
      }, [&](std::size_t ti, const json& a) {
        decode_slot(a.at(0), out[ti].row);
        decode_slot(a.at(1), out[ti].bits);
        decode_slot(a.at(2), out[ti].kl);
      });
    }
    if (partial_run(ctx)) return result{};  // a shard: the other shards' outcomes are not here

    result r;
    table t = output_schema();
    for (std::size_t ci = 0; ci < NC; ++ci) {
      std::vector<double> cost, loss;
      for (std::size_t pi = 0; pi < NP; ++pi) {
        cost.push_back(out[ci * NP + pi].bits);
        loss.push_back(out[ci * NP + pi].kl);
      }
      const std::vector<bool> front = pareto_front(cost, loss);
      for (std::size_t pi = 0; pi < NP; ++pi) {
        std::vector<cell> row = out[ci * NP + pi].row;
        row.emplace_back(front[pi] ? 1 : 0);
        t.rows.push_back(std::move(row));
      }
    }
    r.tables.push_back(t);

    r.setup["head_dim"] = (static_cast<long long>(hd));
    r.setup["layers_heads"] = ("1 layer, 1 KV head");
    r.setup["queries_per_context"] = (static_cast<long long>(nq));
    r.setup["scenario"] = ("as the citations study: N(0,1) Q/K/V, 4 key channel outliers (offset +-m, pre-RoPE), RoPE base 1e4, "
                "massive activation + sink at token 0, one citation span per query, margin uniform in [-0.5, 1.5] "
                "over the background max; seed * 1000003");
    r.setup["cache"] = ("kvq::kv::layer_cache, prefill appended in one chunk, tensor values calibrated from it and "
                         "frozen (per layer), high precision = bf16");
    r.setup["memory"] = ("cache.report().total(): codes, scales, zero points, bf16 rows, tensor values");
    r.setup["reference"] = ("double attention on the original K/V");
    r.setup["emulated"] = ("fp32 attention on the cache's dequantized K/V");

    // Findings: the frontier at the largest context.
    const long long nmax = *std::max_element(ctxs.begin(), ctxs.end());
    const std::size_t c_bits = column_index(t, "bits_per_value"), c_kl = column_index(t, "kl"),
                      c_fr = column_index(t, "on_frontier"), c_fc = column_index(t, "false_citation_rate");
    std::string line = "memory/KL frontier at n=" + std::to_string(nmax) + ": ";
    bool first = true;
    for (const auto& row : t.rows) {
      if (row[3].i != nmax || row[c_fr].i != 1) continue;
      char b[160];
      std::snprintf(b, sizeof b, "%s%s (%.2f bits, KL %.3g, false citations %.1f%%)", first ? "" : "; ",
                    row[0].s.c_str(), row[c_bits].d, row[c_kl].d, 100 * row[c_fc].d);
      line += b;
      first = false;
    }
    r.findings.push_back(line);
    return r;
  };
  return d;
}

}  // namespace kvq::study::policy
