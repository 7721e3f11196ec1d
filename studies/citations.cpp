// studies/citations.cpp — the falsification test of seed article 1.
//
// The article: run an FP16 engine and an FP8/NVFP4-cache engine side by side on the
// same long prompts; if the false-citation rate differs by less than 0.2 percentage
// points beyond 32k tokens, the worry that low-precision KV caches lose citation spans
// is unfounded.
//
// Here: long synthetic contexts, each query with its own citation span (a needle of
// `span` tokens whose keys match that query with a logit margin delta over the
// background maximum, delta drawn uniformly from [margin-min, margin-max]).
// A query's citation is "retrieved" when the best-ranked token of its span is among the
// top-k attention weights. A scheme's false-citation rate is the share of queries whose
// span is in the reference top-k (double attention on the original keys) but not in the
// top-k of the attention computed on the scheme's dequantized keys (and the top-1
// variant: the span holds the reference argmax but not the emulated one), with 95 %
// Wilson intervals.
//
// The article's quantity is the gap to the 16-bit engine, not the rate against the
// double reference: bf16 keys (the 16-bit engine) lose a few citations too. bf16 is
// always run (as the baseline, listed or not), on the same queries, so the gap is a
// difference of paired proportions: per (scheme, context) the discordant queries (false
// for the scheme only, false for bf16 only) give the gap and its 95 % interval
// (Newcombe's method 10 for paired data, kvq::study::newcombe_paired). The verdict per
// scheme takes that interval at every context beyond 32k, and pooled over them: each
// length has its own random stream (lab::context_seed), so the lengths are independent
// samples and their counts add.
//
// Setup per (context n, seed s): kvq::inject::build_scenario with Gaussian Q/K/V, RoPE
// (base 1e4) over the 4 pre-RoPE key channel outliers (offset +-m), massive activations
// (100 x median|K|, 2 channels) on token 0, which is also an attention sink with logit gap
// Delta, and one citation span per query at a random position in its own slot of the
// context. Only the keys matter for the weights, so V is not quantized.
// Reference weights: double (kvq::attention reference_query's scores and softmax);
// emulated: fp32 scores and softmax on the dequantized keys (storage_query's order).
#include "studies.hpp"

#include <kvq/study.hpp>
#include <kvq/study/lab.hpp>
#include <kvq/study/schemes.hpp>
#include <kvq/study/stats.hpp>

#include <kvq/core/math.hpp>
#include <kvq/core/parallel.hpp>
#include <kvq/core/reduce.hpp>
#include <kvq/attention/weights_batch.hpp>
#include <kvq/inject/scenario.hpp>
#include <kvq/metrics/order.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace kvq::study::citations {

using kvq::matrix_f;

// The article's threshold (percentage points), where it applies (beyond 32k tokens) and
// its 16-bit engine (the baseline of the gap).
inline constexpr double threshold = 0.002;
inline constexpr long long beyond = 32768;
inline const char* const baseline = "bf16";

inline table results_schema() {
  table t;
  t.title = "False-citation rate per scheme and context (95% Wilson) and the gap to bf16 (95% paired Newcombe)";
  t.columns = {{"scheme", "KV-cache scheme of the keys"},
               {"context", "context length in tokens"},
               {"queries", "queries (one citation span each)", false},
               {"ref_in_topk", "queries whose span is in the reference top-k (the denominator)"},
               {"false_topk", "... of those, span not in the emulated top-k"},
               {"false_rate", "false_topk / ref_in_topk"},
               {"ci_low", "95% Wilson lower bound of false_rate", false},
               {"ci_high", "95% Wilson upper bound of false_rate", false},
               {"false_only_scheme", "ref_in_topk queries false for this scheme and not for bf16", false},
               {"false_only_bf16", "ref_in_topk queries false for bf16 and not for this scheme", false},
               {"gap_bf16", "(false_only_scheme - false_only_bf16) / ref_in_topk = false_rate - bf16's (nan: bf16)"},
               {"gap_low", "95% lower bound of gap_bf16 (Newcombe 1998 paired method 10; nan: bf16)"},
               {"gap_high", "95% upper bound of gap_bf16 (nan: bf16)"},
               {"gap_verdict", "gap<0.2pp: gap_high < 0.2%; gap>=0.2pp: gap_low >= 0.2%; inconclusive otherwise; "
                               "reference: the bf16 row"},
               {"ref_top1", "queries whose span holds the reference argmax", false},
               {"false_top1", "... of those, span does not hold the emulated argmax", false},
               {"false_rate_top1", "false_top1 / ref_top1"},
               {"ci_low_top1", "95% Wilson lower bound of false_rate_top1", false},
               {"ci_high_top1", "95% Wilson upper bound of false_rate_top1", false},
               {"mean_rank_shift", "mean (emulated - reference) best span rank over ref_in_topk queries", false}};
  return t;
}

inline table verdict_schema() {
  table t;
  t.name = "verdict";
  t.title = "Verdict against the article's threshold: gap to bf16 < 0.2 pp beyond 32k tokens";
  t.columns = {{"scheme", "KV-cache scheme"},
               {"contexts_beyond_32k", "number of contexts > 32768 tokens in the grid"},
               {"ref_in_topk", "ref_in_topk queries pooled over those contexts (independent streams)", false},
               {"false_rate", "pooled false-citation rate (nan: no context beyond 32k)", false},
               {"false_only_scheme", "pooled queries false for this scheme and not for bf16", false},
               {"false_only_bf16", "pooled queries false for bf16 and not for this scheme", false},
               {"gap_bf16", "pooled gap to bf16 (nan: bf16, or no context beyond 32k)"},
               {"gap_low", "95% lower bound of the pooled gap (Newcombe 1998 paired method 10)"},
               {"gap_high", "95% upper bound of the pooled gap"},
               {"max_gap_high", "largest per-context upper bound of the gap beyond 32k", false},
               {"queries_80pct_power", "ref_in_topk queries per context for 80% power to separate the pooled gap from "
                                      "0.2% at 95% (pooled discordance; nan: none discordant or bf16)"},
               {"verdict", "per context beyond 32k: gap<0.2pp: every upper bound below 0.2%; gap>=0.2pp: some lower "
                           "bound at or above 0.2%; inconclusive otherwise"},
               {"pooled_verdict", "the same rule on the pooled interval"}};
  return t;
}

// The three-way reading of one interval against the threshold.
inline std::string gap_state(const paired_difference& g) {
  if (g.high < threshold) return "gap<0.2pp";
  if (g.low >= threshold) return "gap>=0.2pp";
  return "inconclusive";
}

study_def definition() {
  study_def d;
  d.name = "citations";
  d.summary = "falsification test: false-citation gap of low-precision KV caches to bf16 vs context length (0.2 pp beyond 32k)";
  d.description =
      "Long synthetic contexts (RoPE, key channel outliers, a massive-activation sink) with one citation span per\n"
      "query. False-citation rate = share of queries whose span is in the reference top-k but not in the top-k\n"
      "computed on the scheme's dequantized keys (and the top-1 variant), by context length, with 95% Wilson\n"
      "intervals; the gap to bf16 (the article's 16-bit engine, always run on the same queries) with a 95%\n"
      "paired interval (Newcombe's method 10), and a verdict per scheme against the article's\n"
      "0.2-percentage-point threshold on that gap beyond 32k tokens (per context and pooled; every length has\n"
      "its own random stream). To show a gap below 0.2 pp with no discordant query takes about 1920 queries.";
  d.params = {
      scheme_param("schemes", "bf16,fp8_e4m3,fp8_e4m3_cal,nvfp4_te,mxfp4_rceil", "bf16,fp8_e4m3,nvfp4_te",
                   "KV-cache schemes (keys)"),
      {"contexts", param_kind::int_list, "4k,16k,32k,64k,128k", "4k,8k", "context lengths in tokens", {}, 64,
       1 << 22, "context length"},
      {"seeds", param_kind::integer, "8", "2", "independent contexts per length", {}, 1, 1 << 16, "seed count"},
      {"queries", param_kind::integer, "256", "48", "queries (citation spans) per context", {}, 1, 1 << 16,
       "query count"},
      {"topk", param_kind::integer, "5", "", "k of the top-k test", {}, 1, 1 << 20, "k"},
      {"span", param_kind::integer, "4", "", "tokens per citation span", {}, 1, 1 << 10, "span length"},
      {"margin-min", param_kind::real, "-0.5", "", "lowest citation logit margin over the background max", {}, -100,
       100, "margin"},
      {"margin-max", param_kind::real, "1.5", "", "highest citation logit margin over the background max", {}, -100,
       100, "margin"},
      {"outlier", param_kind::real, "10", "", "key channel-outlier offset m (4 channels, pre-RoPE; 0 = none)", {}, 0,
       1e30, "outlier magnitude"},
      {"sink-delta", param_kind::real, "8", "", "logit gap of the sink (token 0)", {}, -100, 100, "logit gap"},
      {"head-dim", param_kind::integer, "128", "", "head dimension d (even; >= 8, or >= 4 with --outlier 0)", {}, 4,
       4096, "head dimension"},
  };
  d.outputs = {results_schema(), verdict_schema()};
  d.validate = [](const config& c) {
    check_head_dim(c.names("schemes"), c.integer("head-dim"));
    if (c.real("margin-min") > c.real("margin-max"))
      throw usage_error("--margin-min " + term_cell(cell(c.real("margin-min"))) + " exceeds --margin-max " +
                        term_cell(cell(c.real("margin-max"))) + " (allowed: margin-min <= margin-max)");
    lab::check_span_grid(c);
  };
  d.run = [](const context& ctx) {
    const config& cfg = ctx.cfg;
    const auto& schemes = cfg.names("schemes");
    const auto& ctxs = cfg.ints("contexts");
    const std::size_t NS = schemes.size(), NC = ctxs.size();
    const std::size_t seeds = static_cast<std::size_t>(cfg.integer("seeds"));
    const std::size_t nq = static_cast<std::size_t>(cfg.integer("queries"));
    const std::size_t k = static_cast<std::size_t>(cfg.integer("topk"));
    const std::size_t span = static_cast<std::size_t>(cfg.integer("span"));
    const std::size_t hd = static_cast<std::size_t>(cfg.integer("head-dim"));
    const double mlo = cfg.real("margin-min"), mhi = cfg.real("margin-max");
    const double outl = cfg.real("outlier"), sink_delta = cfg.real("sink-delta");

    // The passes: the listed schemes, then bf16 when it is not listed (the gap needs it
    // on the same queries). base: the pass of bf16.
    std::vector<std::string> passes(schemes.begin(), schemes.end());
    const auto listed = std::find(passes.begin(), passes.end(), baseline);
    const std::size_t base = static_cast<std::size_t>(listed - passes.begin());
    if (listed == passes.end()) passes.push_back(baseline);
    const std::size_t NP = passes.size();

    // Per (context, seed) task: counts per scheme.
    struct counts {
      std::size_t queries = 0, in_topk = 0, false_topk = 0, top1 = 0, false_top1 = 0;
      std::size_t only_scheme = 0, only_base = 0;  // discordant with bf16, over in_topk queries
      double rank_shift = 0;  // sum over in_topk queries (exact in double for these sizes)
    };
    const std::size_t ntask = NC * seeds;
    std::vector<std::vector<counts>> res(ntask, std::vector<counts>(NS));
    std::vector<double> cost(ntask);
    for (std::size_t i = 0; i < ntask; ++i) cost[i] = double(ctxs[i / seeds]);
    // Threads beyond one per (context, seed) task work inside each task: on the
    // scenario's generation (its values do not depend on the count) and on the passes,
    // each worker taking every inner-th pass with its own buffers (a pass writes only its
    // own ranks). A one-cell grid thus uses every thread; the counts are the same bits.
    const unsigned all_threads = ctx.threads ? ctx.threads : default_threads();
    const unsigned inner = ntask >= all_threads ? 1u : static_cast<unsigned>(all_threads / ntask);
    // The (context, seed) tasks are independent: the phase a --shard run splits.
    run_sharded_tasks(ctx, ntask, cost, [&](std::size_t ti) {
      const std::size_t n = static_cast<std::size_t>(ctxs[ti / seeds]);
      // Each length has its own stream: a longer context does not hold a shorter one's keys.
      const std::uint64_t seed = lab::context_seed(cfg.seed, ti % seeds, n);
      // One span per query, at a random offset inside the query's own slot of the
      // context after the sink (slots keep the spans apart), margin uniform in [lo, hi].
      kvq::inject::scenario_config sc =
          lab::citation_scenario(n, nq, hd, seed, outl, sink_delta, span, mlo, mhi, /*stream=*/0);
      sc.shape.values = false;  // only the keys enter the weights (V has its own stream)
      sc.shape.threads = inner;
      sc.needle_keep_screen = true;  // the ranks below start from it (lab::screen_from_needles)
      kvq::inject::scenario built = kvq::inject::build_scenario(sc);
      const matrix_f& K = built.data.k[0];
      const matrix_f& Q = built.data.q[0];

      // Queries in batches that share each pass over the keys (the weights are the
      // per-query kernels' bits, kvq/attention/weights_batch.hpp; a span's rank comes from
      // the logits where they decide it, kvq/metrics/logit_rank.hpp, else from them).
      // One float screen of every query on the original keys serves the reference ranks
      // and every scheme whose keys stay near the originals (lab::logit_screen); a scheme
      // farther off screens its own keys, in batches of queries.
      const std::size_t B = std::min<std::size_t>(nq, 64);
      std::vector<std::size_t> ref_rank(nq);
      std::vector<std::vector<std::size_t>> emu_rank(NP, std::vector<std::size_t>(nq));
      std::vector<std::vector<std::size_t>> spans(nq);
      for (std::size_t q = 0; q < nq; ++q) spans[q] = built.needle_tokens(0, q);
      const float scale = static_cast<float>(1.0 / kvq::math::sqrt(static_cast<double>(hd)));
      lab::logit_screen screen = lab::screen_from_needles(Q.data(), nq, K, scale, built.heads[0].needles);
      if (screen.x.empty()) screen = lab::screen_logits(Q.data(), nq, K, scale);
      {
        std::vector<double> p_row(n);
        lab::span_ranks_reference_screened(Q.data(), screen, K, spans.data(), p_row.data(), ref_rank.data());
      }
      const unsigned workers = static_cast<unsigned>(std::min<std::size_t>(inner, NP));
      kvq::detail::parallel_tasks("kvq::study::citations", workers, workers, [&](std::size_t w) {
        matrix_f Kh(K.rows(), K.cols());
        std::vector<float> s, s_row(n);
        std::vector<double> p_row(n);
        for (std::size_t pi = w; pi < NP; pi += workers) {
          const scheme_spec& sch = scheme_named(passes[pi]);
          double khmax = 0;
          const std::vector<double> dist = lab::round_trip_keys(sch, K, Kh, &khmax);
          if (lab::span_ranks_fp32_from_screen(Q.data(), screen, Kh, khmax, dist, spans.data(), s_row.data(),
                                               p_row.data(), emu_rank[pi].data()))
            continue;
          s.resize(B * n);
          for (std::size_t q0 = 0; q0 < nq; q0 += B) {
            const std::size_t b = std::min(B, nq - q0);
            lab::span_ranks_fp32_batch(&Q(static_cast<Eigen::Index>(q0), 0), b, Kh, scale, &spans[q0], s.data(),
                                       p_row.data(), &emu_rank[pi][q0], khmax);
          }
        }
      });
      for (std::size_t si = 0; si < NS; ++si) {
        counts& c = res[ti][si];
        for (std::size_t q = 0; q < nq; ++q) {
          const std::size_t er = emu_rank[si][q];
          ++c.queries;
          if (ref_rank[q] <= k) {
            ++c.in_topk;
            const bool lost = er > k, base_lost = emu_rank[base][q] > k;
            if (lost) ++c.false_topk;
            if (lost && !base_lost) ++c.only_scheme;
            if (base_lost && !lost) ++c.only_base;
            c.rank_shift += double(er) - double(ref_rank[q]);
          }
          if (ref_rank[q] == 1) {
            ++c.top1;
            if (er != 1) ++c.false_top1;
          }
        }
      }
    }, [&](std::size_t ti) {
      json a = json::array();
      for (const counts& c : res[ti])
        a.push_back(json::array({c.queries, c.in_topk, c.false_topk, c.top1, c.false_top1, encode_slot(c.rank_shift),
                                 c.only_scheme, c.only_base}));
      return a;
    }, [&](std::size_t ti, const json& a) {
      for (std::size_t si = 0; si < NS; ++si) {
        counts& c = res[ti][si];
        const json& x = a.at(si);
        decode_slot(x.at(0), c.queries);
        decode_slot(x.at(1), c.in_topk);
        decode_slot(x.at(2), c.false_topk);
        decode_slot(x.at(3), c.top1);
        decode_slot(x.at(4), c.false_top1);
        decode_slot(x.at(5), c.rank_shift);
        decode_slot(x.at(6), c.only_scheme);
        decode_slot(x.at(7), c.only_base);
      }
    });
    if (partial_run(ctx)) return result{};  // a shard: the other shards' counts are not here

    // The paired 2x2 table of a scheme against bf16 over the in_topk queries: both false
    // = false_topk - only_scheme, neither = in_topk - both - only_scheme - only_base.
    auto paired = [](const counts& c) {
      const std::size_t both = c.false_topk - c.only_scheme;
      return newcombe_paired(both, c.only_scheme, c.only_base, c.in_topk - both - c.only_scheme - c.only_base);
    };
    const double none = std::nan("");

    // Aggregate per (scheme, context) in a fixed order (integer counts: the same at any
    // thread count).
    result r;
    table t = results_schema();
    table v = verdict_schema();
    for (std::size_t si = 0; si < NS; ++si) {
      const bool is_base = si == base;
      counts pooled;
      std::size_t nbeyond = 0;
      bool any_above = false, all_below = true;
      double max_hi = none;
      for (std::size_t ci = 0; ci < NC; ++ci) {
        counts c;
        for (std::size_t s = 0; s < seeds; ++s) {
          const counts& x = res[ci * seeds + s][si];
          c.queries += x.queries;
          c.in_topk += x.in_topk;
          c.false_topk += x.false_topk;
          c.top1 += x.top1;
          c.false_top1 += x.false_top1;
          c.rank_shift += x.rank_shift;
          c.only_scheme += x.only_scheme;
          c.only_base += x.only_base;
        }
        const interval w = wilson(c.false_topk, c.in_topk);
        const interval w1 = wilson(c.false_top1, c.top1);
        const paired_difference g = is_base ? paired_difference{none, none, none} : paired(c);
        t.rows.push_back({schemes[si], ctxs[ci], c.queries, c.in_topk, c.false_topk, w.rate, w.low, w.high,
                          c.only_scheme, c.only_base, g.diff, g.low, g.high,
                          is_base ? std::string("reference") : gap_state(g), c.top1, c.false_top1, w1.rate, w1.low,
                          w1.high, c.in_topk ? c.rank_shift / double(c.in_topk) : none});
        if (ctxs[ci] > beyond) {
          ++nbeyond;
          pooled.in_topk += c.in_topk;
          pooled.false_topk += c.false_topk;
          pooled.only_scheme += c.only_scheme;
          pooled.only_base += c.only_base;
          if (!is_base) {
            max_hi = nbeyond == 1 ? g.high : std::max(max_hi, g.high);
            if (g.low >= threshold) any_above = true;
            if (!(g.high < threshold)) all_below = false;
          }
        }
      }
      // With no context beyond 32k there is nothing to pool: the pooled columns are
      // undefined and written nan, not 0 (which would read as a measured rate).
      const bool have = nbeyond > 0 && pooled.in_topk > 0;
      const paired_difference g = is_base || !have ? paired_difference{none, none, none} : paired(pooled);
      const std::size_t disc = pooled.only_scheme + pooled.only_base;
      double power_n = none;
      if (!is_base && have && disc > 0)
        power_n = paired_units_for_power(g.diff, double(disc) / double(pooled.in_topk), threshold);
      const std::string verdict = nbeyond == 0 ? "no context beyond 32k in the grid"
                                  : is_base    ? "reference (the 16-bit engine)"
                                  : any_above  ? "gap>=0.2pp (worry supported)"
                                  : all_below  ? "gap<0.2pp (worry not supported)"
                                               : "inconclusive (interval contains 0.2pp; more queries needed)";
      const std::string pooled_verdict = nbeyond == 0 ? "no context beyond 32k in the grid"
                                         : is_base    ? "reference (the 16-bit engine)"
                                                      : gap_state(g);
      v.rows.push_back({schemes[si], nbeyond, pooled.in_topk,
                        have ? double(pooled.false_topk) / double(pooled.in_topk) : none, pooled.only_scheme,
                        pooled.only_base, g.diff, g.low, g.high, max_hi, power_n, verdict, pooled_verdict});
    }
    r.tables.push_back(t);
    r.tables.push_back(v);

    r.setup["head_dim"] = (static_cast<long long>(hd));
    r.setup["seeds_per_context"] = (static_cast<long long>(seeds));
    r.setup["queries_per_context"] = (static_cast<long long>(nq));
    r.setup["seed_of_context"] =
        ("mix(mix(seed * 1000003 + i) ^ n), i = 0 .. seeds-1, n the context length, mix the splitmix64 finaliser: "
         "every length has its own stream (independent samples; no context shares another's keys)");
    r.setup["topk"] = (static_cast<long long>(k));
    r.setup["span_tokens"] = (static_cast<long long>(span));
    r.setup["margin_range"] = (json(std::vector<double>{mlo, mhi}));
    r.setup["scenario"] = ("kvq::inject::build_scenario: N(0,1) Q/K/V; 4 key channel outliers (offset +-m, pre-RoPE); RoPE base "
                "1e4; massive activation 100 x median|K| on token 0 (2 channels, queries neutralized); token 0 is a "
                "sink with logit gap sink-delta; one citation span per query at a random offset in its own slot, "
                "margin uniform in margin_range over the background maximum");
    r.setup["outlier_magnitude"] = (outl);
    r.setup["sink_delta"] = (sink_delta);
    r.setup["reference"] = ("double scores and softmax on the original keys");
    r.setup["emulated"] = ("fp32 scores (softmax_scale = fp32(d^-0.5)) and softmax on the dequantized keys");
    r.setup["baseline"] = ("bf16 keys (the article's 16-bit engine), run on the same queries whether listed or not");
    r.setup["gap_interval"] = ("Newcombe 1998 (Stat Med 17:2635) method 10 for a difference of paired proportions");
    r.setup["threshold_pp"] = (0.2);
    r.setup["threshold_applies_to"] = ("contexts > 32768 tokens");

    for (const auto& row : v.rows) {
      char b[320];
      if (row[1].i == 0)
        std::snprintf(b, sizeof b, "%s: no verdict: there is no context beyond 32k in the grid (give --contexts above 32k)",
                      row[0].s.c_str());
      else if (row[0].s == baseline)
        std::snprintf(b, sizeof b, "%s: the reference of the gap (its own rate beyond 32k: %.3f%%)", row[0].s.c_str(),
                      100 * row[3].d);
      else if (std::isnan(row[10].d))  // no discordant query: the discordance, and so the power, is unknown
        std::snprintf(b, sizeof b,
                      "%s: %s (gap to bf16 beyond 32k, pooled: %+.3f pp, 95%% paired interval %+.3f to %+.3f pp; "
                      "no discordant query, so no power estimate)",
                      row[0].s.c_str(), row[11].s.c_str(), 100 * row[6].d, 100 * row[7].d, 100 * row[8].d);
      else
        std::snprintf(b, sizeof b,
                      "%s: %s (gap to bf16 beyond 32k, pooled: %+.3f pp, 95%% paired interval %+.3f to %+.3f pp; "
                      "about %.0f queries per context for 80%% power)",
                      row[0].s.c_str(), row[11].s.c_str(), 100 * row[6].d, 100 * row[7].d, 100 * row[8].d, row[10].d);
      r.findings.push_back(b);
    }
    return r;
  };
  return d;
}

}  // namespace kvq::study::citations
