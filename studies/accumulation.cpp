// studies/accumulation.cpp — FP8 attention under the accumulation of Hopper's tensor
// cores.
//
// Question: FlashAttention-3's FP8 GEMMs run on sm_90 tensor cores whose fp8 inner
// products keep about 13 fraction bits in the accumulator; two-level accumulation
// (promote to an fp32 accumulator every N tensor-core steps: flash-attention PRs
// #2250/#2323, vLLM flash-attention #104/#122, FlashInfer #3234) was added after RULER
// needle accuracy at 128k tokens fell. How much of FP8 attention's rank and output error
// comes from the accumulator, how does it grow with the context, and how much does
// promotion every N steps recover?
//
// Setup, per context n, one head: kvq::inject::build_scenario with Gaussian Q/K/V, RoPE
// (base 1e4), massive activations (100 x median|K|, 2 channels) on the sink tokens, 4
// sinks with logit gap sink-delta, and one citation span per query (span tokens whose keys
// match that query with margin uniform in [margin-min, margin-max] over the background
// maximum, each in its own slot of the context, as in the citations study).
// Paths, all kvq::attention::fa3_fp8_attention<e4m3> (descale 1, P scaled by 256, FA3's
// KV order and tile: kBlockN = fa3_fp8_block_n(head_dim), 224 for d = 128):
//   ideal_fp32       q.k and P8.V in kvq's fp32 tree (one rounding per addition);
//   sm90             sm_90 e4m3 tensor-core model (kvq/mma presets.hpp: 32 products per
//                    step, 13-bit window, truncated to 13 fraction bits), everything
//                    chained in the tensor-core accumulator (FA3 as released);
//   sm90_promote_N   the same, P.V promoted to an fp32 accumulator every N steps of 32
//                    tokens (N = 7 is once per KV tile of 224 tokens);
//   sm100_nvfp4      not FA3: K/V stored as vLLM's NVFP4 KV cache and run as trtllm-gen's
//                    FP8 math on sm_100 (kvq::attention::sm100_nvfp4_attention: e4m3
//                    operands, the recorded sm_100 e4m3 preset, KV tile 128, forward);
//                    its out_rel_l1_vs_ideal is against the same NVFP4 operands summed in
//                    ideal fp32, so it is the sm_100 accumulator's share alone.
// Reference: double attention on the original K/V.
#include "studies.hpp"

#include <kvq/study.hpp>
#include <kvq/attention/fa3_path.hpp>
#include <kvq/study/lab.hpp>

#include <kvq/attention/fa3_tiles.hpp>
#include <kvq/attention/nvfp4_path.hpp>
#include <kvq/attention/variants.hpp>
#include <kvq/inject/scenario.hpp>
#include <kvq/metrics.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

namespace kvq::study::accumulation {

using kvq::matrix_f;

inline constexpr std::size_t span_topk = 5;

// Relative L1 distance of an output from the ideal-accumulation path's, over the head
// dimension (sum |o - ideal| / sum |ideal|, 0 when ideal is all zero).
inline double rel_l1_distance(const std::vector<float>& o, const std::vector<float>& ideal) {
  double num = 0, den = 0;
  for (std::size_t j = 0; j < ideal.size(); ++j) {
    num += std::fabs(double(o[j]) - double(ideal[j]));
    den += std::fabs(double(ideal[j]));
  }
  return den > 0 ? num / den : 0.0;
}

// Path names: kvq/attention/fa3_path.hpp (ideal_fp32, sm90, sm90_promote_<N>) and
// kvq/attention/nvfp4_path.hpp (sm100_nvfp4).
struct path_spec {
  bool tensor_core = false;  // as fa3_path (sm100_nvfp4: true)
  std::size_t promote = 0;   // as fa3_path (sm100_nvfp4: 0, never)
  bool nvfp4 = false;        // sm100_nvfp4
};
inline bool parse_path(const std::string& s, path_spec& p) {
  if (s == kvq::attention::sm100_nvfp4_path_name()) {
    p = {true, 0, true};
    return true;
  }
  kvq::attention::fa3_path f;
  if (!kvq::attention::parse_fa3_path(s, f)) return false;
  p = {f.tensor_core, f.promote, false};
  return true;
}
inline const std::vector<std::string>& path_names() {
  static const std::vector<std::string> v = [] {
    std::vector<std::string> r = kvq::attention::fa3_path_names();
    r.push_back(kvq::attention::sm100_nvfp4_path_name());
    return r;
  }();
  return v;
}

inline table output_schema() {
  table t;
  t.title = "Accumulation: FP8 attention error per accumulation model and context (means over queries)";
  t.columns = {{"path", "ideal_fp32, sm90 (tensor core, never promoted), sm90_promote_N (fp32 every N steps) or "
                       "sm100_nvfp4 (NVFP4 KV cache, sm_100 FP8 math)"},
               {"promote_every", "tensor-core steps of 32 tokens between promotions (0: never; -1: ideal fp32)"},
               {"context", "context length in tokens"},
               {"queries", "queries averaged", false}};
  for (const auto& c : lab::query_metric_columns()) {
    const std::string n = c.first;
    const bool brief = n == "weighted_tau" || n == "recall_at_8" || n == "kl" || n == "out_rel_l1";
    t.columns.push_back({c.first, c.second, brief});
  }
  t.columns.push_back({"nonfinite_queries", "queries with a NaN/Inf output or infinite KL (not averaged in)", false});
  t.columns.push_back({"out_rel_l1_vs_ideal",
                       "relative L1 distance of the output from the ideal_fp32 path's (the accumulator's own share)"});
  t.columns.push_back({"out_rel_l1_vs_ideal_lo", "95 % Student-t interval of that mean over the queries, lower", false});
  t.columns.push_back({"out_rel_l1_vs_ideal_hi", "95 % Student-t interval of that mean over the queries, upper", false});
  t.columns.push_back({"span_lost_top5", "share of queries whose span is in the reference top-5 but not in the emulated"});
  t.columns.push_back({"span_mass_retained", "emulated / reference attention mass on the query's span"});
  t.columns.push_back({"sink_mass_emu", "emulated attention mass on the sinks", false});
  return t;
}

study_def definition() {
  study_def d;
  d.name = "accumulation";
  d.summary = "FP8 attention (FA3) under ideal fp32 vs sm_90 tensor-core accumulation, promoted every N steps";
  d.description =
      "FlashAttention-3's FP8 forward with Q.K^T and P.V accumulated in ideal fp32, in the sm_90 tensor-core\n"
      "model (13 fraction bits, 32 products per step, all steps chained) or promoted to fp32 every N steps\n"
      "(two-level accumulation), on long contexts with sinks and one citation span per query. Reports the\n"
      "rank/distribution metrics and output error against double attention, the share of citation spans that\n"
      "leave the top-5, and the attention mass kept on the spans. Path sm100_nvfp4 runs an NVFP4 KV cache as\n"
      "an sm_100 kernel with FP8 math computes it (trtllm-gen: K/V transformed to e4m3, sm_100 e4m3 preset).";
  d.params = {
      // The default grid keeps the FA3 paths (its committed results are FA3's); sm100_nvfp4
      // runs when named.
      {"paths", param_kind::name_list, join(kvq::attention::fa3_path_names(), ","), "ideal_fp32,sm90,sm90_promote_1,sm90_promote_16",
       "accumulation models", path_names(), 0, 0, "accumulation path"},
      {"contexts", param_kind::int_list, "4k,16k,64k,128k", "2k,4k", "context lengths in tokens", {}, 256, 1 << 22,
       "context length"},
      {"queries", param_kind::integer, "8", "4", "queries (citation spans) per context", {}, 1, 1 << 16,
       "query count"},
      {"span", param_kind::integer, "4", "", "tokens per citation span", {}, 1, 1 << 10, "span length"},
      {"margin-min", param_kind::real, "-0.5", "", "lowest citation logit margin over the background max", {}, -100,
       100, "margin"},
      {"margin-max", param_kind::real, "1.5", "", "highest citation logit margin over the background max", {}, -100,
       100, "margin"},
      {"sinks", param_kind::integer, "4", "", "sink tokens (the first tokens of the context)", {}, 0, 1 << 10,
       "sink count"},
      {"sink-delta", param_kind::real, "8", "", "logit gap of the sinks", {}, -100, 100, "logit gap"},
      {"head-dim", param_kind::integer, "128", "", "head dimension d (even; >= 4 with sinks)", {}, 2, 4096,
       "head dimension"},
  };
  d.outputs = {output_schema()};
  d.validate = [](const config& c) {
    for (const auto& p : c.names("paths")) {
      path_spec ps;
      if (!parse_path(p, ps))
        throw usage_error("unknown accumulation path '" + p + "' (allowed: " + join(path_names()) + ")");
    }
    for (const auto& p : c.names("paths"))
      if (p == kvq::attention::sm100_nvfp4_path_name() && c.integer("head-dim") % 16 != 0)
        throw usage_error("--head-dim " + std::to_string(c.integer("head-dim")) +
                          " is not a multiple of 16, the NVFP4 block of path sm100_nvfp4");
    if (c.integer("head-dim") % 2 != 0)
      throw usage_error("--head-dim " + std::to_string(c.integer("head-dim")) +
                        " is odd (allowed: even head dimensions; RoPE rotates channel pairs)");
    // With sinks the scenario reserves 2 massive-activation channels, and the citation
    // spans' directions avoid them and the sink direction: 2 channels must stay free.
    if (c.integer("sinks") > 0 && c.integer("head-dim") < 4)
      throw usage_error("--head-dim " + std::to_string(c.integer("head-dim")) +
                        " is too small: with sinks the scenario reserves 2 massive-activation channels and needs 2 "
                        "more for the sink and citation directions (allowed: even head dimensions >= 4, or --sinks 0)");
    if (c.real("margin-min") > c.real("margin-max"))
      throw usage_error("--margin-min " + term_cell(cell(c.real("margin-min"))) + " exceeds --margin-max " +
                        term_cell(cell(c.real("margin-max"))) + " (allowed: margin-min <= margin-max)");
    const long long nmin = *std::min_element(c.ints("contexts").begin(), c.ints("contexts").end());
    const long long need = c.integer("sinks") + c.integer("queries") * (c.integer("span") + 1);
    if (nmin < need)
      throw usage_error("--contexts " + std::to_string(nmin) + " is too short for " +
                        std::to_string(c.integer("sinks")) + " sinks and " + std::to_string(c.integer("queries")) +
                        " spans of " + std::to_string(c.integer("span")) + " tokens (allowed: contexts >= " +
                        std::to_string(need) + ")");
  };
  d.run = [](const context& ctx) {
    const config& cfg = ctx.cfg;
    const auto& paths = cfg.names("paths");
    const auto& ctxs = cfg.ints("contexts");
    const std::size_t hd = static_cast<std::size_t>(cfg.integer("head-dim"));
    const std::size_t nq = static_cast<std::size_t>(cfg.integer("queries"));
    const std::size_t span = static_cast<std::size_t>(cfg.integer("span"));
    const std::size_t nsink = static_cast<std::size_t>(cfg.integer("sinks"));
    const double mlo = cfg.real("margin-min"), mhi = cfg.real("margin-max"), sink_delta = cfg.real("sink-delta");
    const std::size_t NC = ctxs.size(), NP = paths.size();
    const std::size_t block_n = kvq::attention::fa3_fp8_block_n(hd);

    // Phase 1: scenario and reference per context.
    struct scenario_cell {
      matrix_f K, V, Q;
      std::vector<std::vector<std::size_t>> spans;
      std::vector<std::vector<double>> p, o;
    };
    std::vector<scenario_cell> cells(NC);
    {
      std::vector<double> cost(NC);
      for (std::size_t i = 0; i < NC; ++i) cost[i] = double(ctxs[i]);
      run_tasks(NC, cost, ctx.threads, ctx.prog, [&](std::size_t i) {
        const std::size_t n = static_cast<std::size_t>(ctxs[i]);
        kvq::inject::scenario_config sc;
        sc.shape.tokens = n;
        sc.shape.queries = nq;
        sc.shape.head_dim = hd;
        sc.shape.seed = cfg.seed;
        std::vector<std::size_t> sink_tokens;
        for (std::size_t t = 0; t < nsink; ++t) sink_tokens.push_back(t);
        if (nsink > 0) {
          kvq::inject::massive_activation_config mc;
          mc.tokens = sink_tokens;
          mc.random_count = 2;
          mc.factor = 100.0;
          mc.seed = cfg.seed;
          sc.massive = mc;
          kvq::inject::sink_config sk;
          sk.count = nsink;
          sk.delta = sink_delta;
          sk.seed = cfg.seed;
          sc.sinks = sk;
        }
        const kvq::inject::counter_rng rng{cfg.seed, kvq::inject::make_stream(kvq::inject::stream_kind::user, 1,
                                                                              static_cast<std::uint32_t>(n >> 6))};
        const std::size_t slot = (n - nsink) / nq;
        for (std::size_t q = 0; q < nq; ++q) {
          kvq::inject::scenario_needle nd;
          nd.row = q;
          nd.length = span;
          nd.position = nsink + q * slot + rng.uniform_below(2 * q, static_cast<std::uint32_t>(slot - span + 1));
          nd.margin = mlo + (mhi - mlo) * rng.uniform_double(2 * q + 1);
          sc.needles.push_back(nd);
        }
        kvq::inject::scenario built = kvq::inject::build_scenario(sc);
        scenario_cell& c = cells[i];
        c.K = std::move(built.data.k[0]);
        c.V = std::move(built.data.v[0]);
        c.Q = std::move(built.data.q[0]);
        for (std::size_t q = 0; q < nq; ++q) c.spans.push_back(built.needle_tokens(0, q));
        const kvq::attention::reference_attention ref(c.K, c.V);
        kvq::attention::workspace aws;
        c.p.assign(nq, std::vector<double>(n));
        c.o.assign(nq, std::vector<double>(hd));
        for (std::size_t q = 0; q < nq; ++q)
          ref.run(&c.Q(static_cast<Eigen::Index>(q), 0), c.p[q].data(), c.o[q].data(), aws);
      });
    }

    // Phase 2: every (context, path, query).
    const std::size_t ntask = NC * NP * nq;
    struct query_out {
      lab::query_metrics m;
      double lost = 0, retained = 0, sink_mass = 0, vs_ideal = 0;
    };
    std::vector<query_out> res(ntask);
    {
      std::vector<double> cost(ntask);
      for (std::size_t i = 0; i < ntask; ++i) {
        path_spec ps;
        parse_path(paths[(i / nq) % NP], ps);
        cost[i] = double(ctxs[i / (NP * nq)]) * (ps.tensor_core ? 20.0 : 1.0);
      }
      run_tasks(ntask, cost, ctx.threads, ctx.prog, [&](std::size_t ti) {
        const std::size_t ci = ti / (NP * nq), pi = (ti / nq) % NP, q = ti % nq;
        const scenario_cell& c = cells[ci];
        const std::size_t n = static_cast<std::size_t>(c.K.rows());
        path_spec ps;
        parse_path(paths[pi], ps);
        kvq::attention::workspace aws;
        kvq::metrics::workspace ws(n);
        std::vector<double> p(n);
        std::vector<float> o(hd);
        query_out& r = res[ti];
        if (ps.nvfp4) {
          // The NVFP4 store and its e4m3 operands are made per task, like the FP8 copy below.
          const kvq::attention::sm100_nvfp4_attention att(c.K, c.V);
          att.run(&c.Q(static_cast<Eigen::Index>(q), 0), p.data(), o.data(), aws);
          kvq::attention::sm100_nvfp4_options io;
          io.accumulation = kvq::attention::fa3_accumulation::ideal_fp32;
          const kvq::attention::sm100_nvfp4_attention ideal(c.K, c.V, io);
          std::vector<double> pi_(n);
          std::vector<float> oi(hd);
          ideal.run(&c.Q(static_cast<Eigen::Index>(q), 0), pi_.data(), oi.data(), aws);
          r.vs_ideal = rel_l1_distance(o, oi);
        } else {
          kvq::attention::fa3_options fo;
          fo.block_n = block_n;
          kvq::attention::apply_fa3_path(kvq::attention::fa3_path{ps.tensor_core, ps.promote}, fo);
          // One query per task: the FP8 copy of K/V is made per task (O(n d), small next
          // to the tensor-core model's cost).
          const kvq::attention::fa3_fp8_attention<> att(c.K, c.V, fo);
          att.run(&c.Q(static_cast<Eigen::Index>(q), 0), p.data(), o.data(), aws);
          if (ps.tensor_core) {
            kvq::attention::fa3_options fi;
            fi.block_n = block_n;
            const kvq::attention::fa3_fp8_attention<> ideal(c.K, c.V, fi);
            std::vector<double> pi_(n);
            std::vector<float> oi(hd);
            ideal.run(&c.Q(static_cast<Eigen::Index>(q), 0), pi_.data(), oi.data(), aws);
            r.vs_ideal = rel_l1_distance(o, oi);
          }
        }
        r.m = lab::evaluate(c.p[q].data(), p.data(), n, c.o[q].data(), o.data(), hd, ws);
        const auto nm = kvq::metrics::needle_metrics(c.p[q].data(), p.data(), n, c.spans[q]);
        r.lost = (nm.best_rank_reference <= span_topk && nm.best_rank_emulated > span_topk) ? 1.0 : 0.0;
        r.retained = nm.retained;
        double sm = 0;
        for (std::size_t t = 0; t < nsink; ++t) sm += p[t];
        r.sink_mass = sm;
      });
    }

    result r;
    table t = output_schema();
    auto mean = [](const std::vector<double>& v) {
      return kvq::metrics::aggregate(v.data(), v.size(), kvq::metrics::better::lower, {}).mean;
    };
    for (std::size_t pi = 0; pi < NP; ++pi)
      for (std::size_t ci = 0; ci < NC; ++ci) {
        std::vector<lab::query_metrics> qm;
        std::vector<double> lost, kept, sinkm, vsi;
        for (std::size_t q = 0; q < nq; ++q) {
          const query_out& x = res[(ci * NP + pi) * nq + q];
          qm.push_back(x.m);
          kept.push_back(x.retained);
          sinkm.push_back(x.sink_mass);
          lost.push_back(x.lost);
          vsi.push_back(x.vs_ideal);
        }
        path_spec ps;
        parse_path(paths[pi], ps);
        const lab::metric_means mm = lab::mean_over(qm);
        std::vector<cell> row = {paths[pi], ps.tensor_core ? static_cast<long long>(ps.promote) : -1LL, ctxs[ci],
                                 static_cast<long long>(nq)};
        for (double v : mm.mean) row.emplace_back(v);
        row.emplace_back(static_cast<long long>(mm.nonfinite));
        row.emplace_back(mean(vsi));
        const mean_interval vci = mean_ci(vsi);
        row.emplace_back(vci.low);
        row.emplace_back(vci.high);
        row.emplace_back(mean(lost));
        row.emplace_back(mean(kept));
        row.emplace_back(mean(sinkm));
        t.rows.push_back(std::move(row));
      }
    r.tables.push_back(t);

    r.setup["head_dim"] = (static_cast<long long>(hd));
    r.setup["queries_per_context"] = (static_cast<long long>(nq));
    r.setup["block_n"] = (static_cast<long long>(block_n));
    r.setup["span_tokens"] = (static_cast<long long>(span));
    r.setup["margin_range"] = (json(std::vector<double>{mlo, mhi}));
    r.setup["sinks"] = (static_cast<long long>(nsink));
    r.setup["sink_delta"] = (sink_delta);
    r.setup["scenario"] = ("kvq::inject::build_scenario: N(0,1) Q/K/V, RoPE base 1e4, massive activations 100 x median|K| on "
                "the sink keys (2 channels, queries neutralized), sinks with logit gap sink-delta, one citation span "
                "per query at a random offset in its own slot, margin uniform in margin_range");
    r.setup["reference"] = ("double attention on the original K/V");
    if (std::any_of(paths.begin(), paths.end(), [](const std::string& x) { return x == kvq::attention::sm100_nvfp4_path_name(); }))
      r.setup["emulated_sm100_nvfp4"] =
          ("kvq::attention::sm100_nvfp4_attention: K/V stored by vLLM's NVFP4 KV-cache store (tensor value amax/2688), "
           "operands e4m3(e2m1 * sf / 8) (inferred), Q e4m3 (scale 1), P x 256 cast to e4m3, KV tile 128 forward "
           "(inferred), the recorded sm_100 e4m3 tensor-core preset chained, never promoted; out_rel_l1_vs_ideal "
           "against the same operands in ideal fp32");
    r.setup["emulated"] = ("kvq::attention::fa3_fp8_attention<e4m3>: descale 1, P x 256 cast to e4m3, reverse KV order, "
                "kBlockN = fa3_fp8_block_n(head_dim); accumulation ideal fp32 or the sm_90 e4m3 tensor-core preset "
                "(inferred for c != 0), P.V promoted to fp32 every N steps of 32 tokens");

    // Findings: output error and span loss at the longest context, per path.
    const std::size_t c_rel = column_index(t, "out_rel_l1_vs_ideal"), c_lost = column_index(t, "span_lost_top5"),
                      c_w = column_index(t, "weighted_tau");
    const long long nbig = *std::max_element(ctxs.begin(), ctxs.end());
    std::string line = "at n=" + std::to_string(nbig) + ": output rel. L1 distance from ideal fp32 / weighted tau / spans lost: ";
    bool first = true;
    for (const auto& row : t.rows) {
      if (row[2].i != nbig) continue;
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s%s %.3g / %.4f / %.1f%%", first ? "" : ", ", row[0].s.c_str(), row[c_rel].d,
                    row[c_w].d, 100 * row[c_lost].d);
      line += buf;
      first = false;
    }
    r.findings.push_back(line);
    // Ordering of the tensor-core paths by promotion interval (1, 4, ..., never), per
    // context: the paired difference of out_rel_l1_vs_ideal between neighbours (the same
    // queries on both paths) with its 95 % t-interval; an interval that excludes 0
    // resolves the order, one that does not leaves it open.
    std::vector<std::size_t> tc;
    for (std::size_t pi = 0; pi < NP; ++pi) {
      path_spec ps;
      parse_path(paths[pi], ps);
      if (ps.tensor_core && !ps.nvfp4) tc.push_back(pi);  // the sm_90 paths' promotion order
    }
    auto interval_of = [&](std::size_t pi) {
      path_spec ps;
      parse_path(paths[pi], ps);
      return ps.promote == 0 ? std::numeric_limits<std::size_t>::max() : ps.promote;
    };
    std::stable_sort(tc.begin(), tc.end(), [&](std::size_t a, std::size_t b) { return interval_of(a) < interval_of(b); });
    if (tc.size() >= 2 && nq >= 2)
      for (std::size_t ci = 0; ci < NC; ++ci) {
        std::string ord = "at n=" + std::to_string(ctxs[ci]) + ", paired distance from ideal fp32 (later - earlier): ";
        for (std::size_t k = 1; k < tc.size(); ++k) {
          std::vector<double> diff(nq);
          for (std::size_t q = 0; q < nq; ++q)
            diff[q] = res[(ci * NP + tc[k]) * nq + q].vs_ideal - res[(ci * NP + tc[k - 1]) * nq + q].vs_ideal;
          const mean_interval m = mean_ci(diff);
          char buf[200];
          std::snprintf(buf, sizeof buf, "%s%s vs %s %+.3g [%+.3g, %+.3g] %s", k == 1 ? "" : "; ",
                        paths[tc[k]].c_str(), paths[tc[k - 1]].c_str(), m.mean, m.low, m.high,
                        m.low > 0 ? "(larger: resolved)" : m.high < 0 ? "(smaller: resolved)" : "(not resolved)");
          ord += buf;
        }
        r.findings.push_back(ord);
      }
    return r;
  };
  return d;
}

}  // namespace kvq::study::accumulation
