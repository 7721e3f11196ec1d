// studies/outliers.cpp — the flagship study: what key channel outliers do to the
// attention ranking under each KV-cache scheme, as the context grows.
//
// Question (seed article 1): "a single large outlier can own a block scale and flush
// its neighbours to zero" — how much, for which formats, and does it get worse with
// context length?
//
// Setup, per (context n, outlier magnitude m), one attention head, head_dim d:
//   Q (queries x d), K, V (n x d): independent N(0, 1) draws from kvq's counter-based
//   generator (kvq::inject::generate_qkv, seeded by --seed; the same base tensors for
//   every magnitude of a context, so only the outliers differ);
//   K channel outliers: `outlier-channels` channels (chosen by the seed) get a
//   persistent offset of +m or -m (alternating) on every token
//   (kvq::inject::inject_channel_outliers, gain 1). The reference attention is unchanged by
//   m, and the queries are zero on the outlier channels, so the exact logits do not
//   depend on m at all: every change in the emulated attention is damage done through
//   the quantization scales the outliers own. m = 0: no outliers.
// For each scheme: K^ = dequant(quant(K)), V^ likewise (kvq::block recipes, blocks along
// head_dim; see kvq/study/schemes.hpp); reference attention in double on K/V versus fp32
// attention on K^/V^ (kvq/study/lab.hpp); per-query metrics (kvq::metrics) averaged over
// the queries; and the share of K elements flushed to zero: over all non-outlier
// elements, and over those sharing a scale with an outlier channel.
//
// With --kv FILE (docs/kv-input.md) Q/K/V are one captured head instead of the N(0, 1)
// draws; the context is its token count, the queries are the last captured positions
// and attention is causal (--non-causal: all keys). The model's own queries and keys are
// used as captured (magnitudes fixed at 0, no query zeroing) unless --kv-treatments asks
// for the channel outliers and the query zeroing on top.
#include "studies.hpp"

#include <kvq/study.hpp>
#include <kvq/study/kv_source.hpp>
#include <kvq/study/lab.hpp>
#include <kvq/study/schemes.hpp>

#include <kvq/inject/generate.hpp>
#include <kvq/inject/patterns.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace kvq::study::outliers {

using kvq::matrix_f;

struct flush_stats {
  double all = 0;     // non-outlier K elements (nonzero) that dequantize to 0
  double shared = 0;  // ... among those sharing a scale with an outlier channel (NaN if none share)
  double outlier_rel_err = 0;  // mean |K^ - K| / |K| over the outlier-channel elements
};

/// Whether a[0..n) and b[0..n) hold the same bits (NaN payloads and signed zeros
/// included, which operator== would not tell apart).
template <class T>
inline bool same_bits(const T* a, const T* b, std::size_t n) {
  return n == 0 || std::memcmp(a, b, n * sizeof(T)) == 0;
}

inline flush_stats measure_flush(const scheme_spec& s, const float* K, const float* Kh, std::size_t n, std::size_t d,
                                 const std::vector<std::size_t>& outl) {
  // Per channel: 1 for a non-outlier channel (counted), and 1 where it also shares a
  // scale with an outlier channel. The counts are integers (any order gives them); the
  // outlier channels' error is a double sum, kept in (token, channel) order.
  std::vector<std::uint32_t> counted(d, 1), shares(d, 0);
  std::vector<std::size_t> out_channels(outl.begin(), outl.end());
  std::sort(out_channels.begin(), out_channels.end());
  out_channels.erase(std::unique(out_channels.begin(), out_channels.end()), out_channels.end());
  for (auto c : out_channels) counted[c] = 0;
  for (std::size_t c = 0; c < d; ++c) shares[c] = counted[c] && shares_scale_with(s, kv_role::key, c, d, outl);
  std::size_t tot = 0, fl = 0, stot = 0, sfl = 0;
  double oerr = 0;
  std::size_t on = 0;
  for (std::size_t t = 0; t < n; ++t) {
    const float* x = K + t * d;
    const float* y = Kh + t * d;
    std::uint32_t a = 0, b = 0, e = 0, f = 0;  // per token: at most d each
    for (std::size_t c = 0; c < d; ++c) {
      const std::uint32_t nz = static_cast<std::uint32_t>(x[c] != 0.0f) & counted[c];
      const std::uint32_t z = nz & static_cast<std::uint32_t>(y[c] == 0.0f);
      a += nz;
      b += z;
      e += nz & shares[c];
      f += z & shares[c];
    }
    tot += a;
    fl += b;
    stot += e;
    sfl += f;
    for (std::size_t c : out_channels) {
      if (x[c] != 0.0f) {
        oerr += std::fabs(static_cast<double>(y[c]) - static_cast<double>(x[c])) / std::fabs(static_cast<double>(x[c]));
        ++on;
      }
    }
  }
  flush_stats f;
  f.all = tot ? double(fl) / double(tot) : 0.0;
  f.shared = stot ? double(sfl) / double(stot) : std::nan("");
  f.outlier_rel_err = on ? oerr / double(on) : 0.0;
  return f;
}

inline table output_schema() {
  table t;
  t.title = "Attention distortion per scheme, outlier magnitude and context (means over queries)";
  t.columns = {{"scheme", "KV-cache scheme (kvq study outliers --help lists them)"},
               {"magnitude", "key channel-outlier offset m (0 = no outliers; background N(0,1))"},
               {"context", "context length n in tokens"},
               {"bits_per_value", "stored bits per K/V element, scales included", false},
               {"queries", "queries averaged", false}};
  for (const auto& c : lab::query_metric_columns()) {
    bool brief = std::string(c.first) == "kendall_tau_b" || std::string(c.first) == "weighted_tau" ||
                 std::string(c.first) == "recall_at_8" || std::string(c.first) == "kl";
    t.columns.push_back({c.first, c.second, brief});
  }
  t.columns.push_back({"nonfinite_queries", "queries with a NaN/Inf output or infinite KL (not averaged in)", false});
  t.columns.push_back({"k_flush_frac", "share of non-outlier K elements flushed to 0 by quantization"});
  t.columns.push_back({"k_flush_frac_shared",
                       "share flushed to 0 among the elements sharing a scale with an outlier channel (nan: none share)"});
  t.columns.push_back({"outlier_rel_err", "mean relative error of the outlier-channel elements themselves", false});
  return t;
}

study_def definition() {
  study_def d;
  d.name = "outliers";
  d.summary = "key channel outliers x scheme x context length -> rank distortion and flushed-to-zero share";
  d.description =
      "Every scheme (bf16, FP8 per-tensor/per-token-head, NVFP4, MXFP4, MXFP8, KIVI INT4) stores a K/V head\n"
      "whose keys carry persistent channel outliers of magnitude m; fp32 attention on the dequantized cache is\n"
      "compared with double-precision attention on the original. Reports rank metrics (Kendall tau-b,\n"
      "weighted tau, Spearman, top-k recall, argmax flips), distribution distances (KL, JS, TV), output\n"
      "errors, and the share of K elements that an outlier-dominated scale flushes to zero. The outlier is a\n"
      "constant per-channel offset and the queries are zero on those channels, so the exact logits do not\n"
      "change with m: all damage comes through the quantization scales the outliers own. Study time grows\n"
      "linearly with the context length.\n"
      "With --kv FILE: the model's own queries (the last captured positions) and keys, causal attention, no\n"
      "outliers injected and no query zeroed (--magnitudes fixed at 0); --kv-treatments injects the outliers\n"
      "and zeroes the queries on their channels as above; --non-causal lets every query see all keys.";
  d.params = {
      scheme_param("schemes", join(default_schemes(), ","), "", "KV-cache schemes to compare"),
      {"magnitudes", param_kind::real_list, "0,10,100,1000", "0,100",
       "key channel-outlier magnitudes m (0 = none)", {}, 0, 1e30, "outlier magnitude"},
      {"contexts", param_kind::int_list, "1k,4k,16k,32k,128k", "1k,4k",
       "context lengths in tokens (>= 2: the reference softmax needs two tokens)", {}, 2, 1 << 22, "context length"},
      {"head-dim", param_kind::integer, "128", "", "head dimension d", {}, 1, 4096, "head dimension"},
      {"queries", param_kind::integer, "4", "2", "queries per cell", {}, 1, 1 << 20, "query count"},
      {"outlier-channels", param_kind::integer, "4", "", "number of outlier channels", {}, 1, 4096,
       "outlier channel count"},
  };
  d.outputs = {output_schema()};
  d.kv.accepted = true;
  d.kv.treatment_params = {{"magnitudes", "0"}};
  d.validate = [](const config& c) {
    check_head_dim(c.names("schemes"), c.integer("head-dim"));
    if (c.integer("outlier-channels") > c.integer("head-dim"))
      throw usage_error("--outlier-channels " + std::to_string(c.integer("outlier-channels")) +
                        " exceeds --head-dim " + std::to_string(c.integer("head-dim")) +
                        " (allowed: 1 to head_dim)");
  };
  d.run = [](const context& ctx) {
    const config& cfg = ctx.cfg;
    const auto& schemes = cfg.names("schemes");
    const auto& mags = cfg.reals("magnitudes");
    const auto& ctxs = cfg.ints("contexts");
    const std::size_t hd = static_cast<std::size_t>(cfg.integer("head-dim"));
    const std::size_t nq = static_cast<std::size_t>(cfg.integer("queries"));
    const std::size_t noc = static_cast<std::size_t>(cfg.integer("outlier-channels"));
    const std::size_t nmax_tokens = static_cast<std::size_t>(*std::max_element(ctxs.begin(), ctxs.end()));
    const std::size_t NC = ctxs.size(), NM = mags.size(), NS = schemes.size();

    // Phase 0: base tensors for the longest context. Generator values depend only on
    // (seed, tensor, index), so a shorter context is the prefix of this one.
    kvq::inject::qkv_config qc;
    qc.tokens = nmax_tokens;
    qc.queries = nq;
    qc.head_dim = hd;
    qc.seed = cfg.seed;
    qc.threads = ctx.threads;
    const kvq::inject::qkv base = lab::study_qkv(ctx, qc);
    // The queries are zero on the outlier channels (as kvq::inject's massive-activation
    // injector neutralizes them): the outliers then change the quantization scales but
    // not a single exact logit, so the reference attention is the same for every m and
    // all damage comes from the scales the outliers own. A captured head keeps the
    // model's own queries unless --kv-treatments asks for the zeroing.
    const bool treat = lab::kv_treated(ctx);
    matrix_f Qm = base.q[0];

    // Channel outliers: persistent offsets +m, -m, +m, ... (gain 1) on the same channels
    // for every cell.
    kvq::inject::channel_outlier_config oc0;
    oc0.random_count = noc;
    oc0.seed = cfg.seed;
    oc0.gain = 1.0f;
    const std::vector<std::size_t> channels = kvq::inject::outlier_channels(oc0, hd);
    if (treat)
      for (Eigen::Index r = 0; r < Qm.rows(); ++r)
        for (std::size_t c : channels) Qm(r, static_cast<Eigen::Index>(c)) = 0.0f;
    const float* Q = Qm.data();
    auto inject_outliers = [&](matrix_f& K, double m) {
      kvq::inject::channel_outlier_config oc = oc0;
      oc.channels = channels;
      for (std::size_t i = 0; i < channels.size(); ++i) oc.offsets.push_back(static_cast<float>(i % 2 ? -m : m));
      kvq::inject::inject_channel_outliers(K, oc);
    };
    auto keys_with_outliers = [&](std::size_t n, double m) {
      matrix_f K = base.k[0].topRows(static_cast<Eigen::Index>(n));
      if (m > 0 && treat) inject_outliers(K, m);
      return K;
    };

    double total = 0;
    for (auto n : ctxs) total += double(n) * double(NM) * (0.5 + double(NS));
    if (ctx.prog) ctx.prog->plan(total);

    // Phase 1: reference attention (double) for every (context, magnitude) and query.
    // The metrics' reference side (the sort of p, its ranks and top-k) is prepared here
    // once and shared by every scheme of phase 2.
    struct reference {
      // Query q's weights at p + q * n (n: the cell's context), its outputs at o + q * hd.
      std::vector<double> p, o;
      std::vector<kvq::metrics::prepared_reference> prep;
    };
    std::vector<reference> ref(NC * NM);
    // Phase 2 reads every reference: a --shard run computes all of them, the merge none.
    if (!replaying(ctx)) {
      std::vector<double> cost(NC * NM);
      for (std::size_t i = 0; i < cost.size(); ++i) cost[i] = 0.5 * double(ctxs[i / NM]);
      run_tasks(cost.size(), cost, ctx.threads, ctx.prog, [&](std::size_t i) {
        const std::size_t n = static_cast<std::size_t>(ctxs[i / NM]);
        const kvq::attention::reference_attention att(keys_with_outliers(n, mags[i % NM]),
                                                      base.v[0].topRows(static_cast<Eigen::Index>(n)));
        kvq::attention::workspace aws;
        reference& r = ref[i];
        r.p.assign(nq * n, 0.0);
        r.o.assign(nq * hd, 0.0);
        r.prep.resize(nq);
        std::vector<std::size_t> keys(nq);
        std::vector<kvq::attention::query_status> st(nq);
        for (std::size_t q = 0; q < nq; ++q) keys[q] = lab::keys_seen(ctx, base.query_positions, q, n);
        att.run_prefix_batch(Q, hd, nq, keys.data(), r.p.data(), n, r.o.data(), hd, st.data(), aws);
        for (std::size_t q = 0; q < nq; ++q) r.prep[q].prepare(r.p.data() + q * n, keys[q]);
      });
    }

    // Phase 2: every (context, scheme): V^ once, then K^ and the emulated attention for
    // each magnitude. rows[(ci * NS + si) * NM + mi]
    std::vector<std::vector<cell>> rows(NC * NS * NM);
    {
      std::vector<double> cost(NC * NS);
      for (std::size_t i = 0; i < cost.size(); ++i) cost[i] = double(ctxs[i / NS]) * double(NM);
      run_sharded_tasks(ctx, cost.size(), cost, [&](std::size_t i) {
        const std::size_t ci = i / NS, si = i % NS;
        const std::size_t n = static_cast<std::size_t>(ctxs[ci]);
        const scheme_spec& sc = scheme_named(schemes[si]);
        // V does not depend on the magnitude: quantize it once, then give the attention
        // path the dequantized V and only the key codec.
        matrix_f Vh = kvq::attention::transform_of(sc, kv_role::value)(base.v[0].topRows(static_cast<Eigen::Index>(n)));
        kvq::attention::storage_options so;
        so.codec.k = kvq::attention::transform_of(sc, kv_role::key);
        so.codec.name = sc.name;
        // Every query's emulated rows (weights at p + q * n, outputs at o + q * hd), this
        // magnitude's and the previous one's (swapped after each magnitude).
        std::vector<double> p(nq * n), prev_p(nq * n);
        std::vector<float> o(nq * hd), prev_o(nq * hd);
        std::vector<kvq::attention::query_status> st(nq);
        std::vector<std::size_t> keys(nq);
        for (std::size_t q = 0; q < nq; ++q) keys[q] = lab::keys_seen(ctx, base.query_positions, q, n);
        kvq::attention::workspace aws;
        kvq::metrics::workspace ws(n);
        // The previous magnitude's metrics: the metrics are a function of the reference and
        // emulated rows alone, so a query whose four rows have the same bits as at the
        // previous magnitude has the same metrics (for schemes the outliers do not reach,
        // e.g. bf16, every magnitude after the first).
        std::vector<lab::query_metrics> prev_qm;
        // The keys of each magnitude in one matrix: the base keys, whose outlier channels
        // are restored from the base and injected again for every magnitude
        // (keys_with_outliers' values; the other channels never change).
        matrix_f K = base.k[0].topRows(static_cast<Eigen::Index>(n));
        // V^ is stored once per task; each magnitude replaces the keys (set_keys).
        std::unique_ptr<kvq::attention::storage_attention> stored;
        for (std::size_t mi = 0; mi < NM; ++mi) {
          const double m = mags[mi];
          if (mi > 0)
            for (std::size_t c : channels)
              K.col(static_cast<Eigen::Index>(c)) = base.k[0].col(static_cast<Eigen::Index>(c)).head(static_cast<Eigen::Index>(n));
          if (m > 0 && treat) inject_outliers(K, m);
          if (!stored) {
            stored = std::make_unique<kvq::attention::storage_attention>(K, Vh, so);
            Vh = matrix_f();  // stored holds its own copy
          } else
            stored->set_keys(K);
          const kvq::attention::storage_attention& att = *stored;
          const flush_stats fs = measure_flush(sc, K.data(), att.keys().data(), n, hd, channels);
          const reference& r = ref[ci * NM + mi];
          att.run_prefix_batch(Q, hd, nq, keys.data(), p.data(), n, o.data(), hd, st.data(), aws);
          std::vector<lab::query_metrics> qm;
          for (std::size_t q = 0; q < nq; ++q) {
            const double* pq = p.data() + q * n;
            const float* oq = o.data() + q * hd;
            bool same = false;
            if (mi > 0) {
              const reference& rp = ref[ci * NM + mi - 1];
              same = same_bits(pq, prev_p.data() + q * n, keys[q]) && same_bits(oq, prev_o.data() + q * hd, hd) &&
                     same_bits(r.p.data() + q * n, rp.p.data() + q * n, keys[q]) &&
                     same_bits(r.o.data() + q * hd, rp.o.data() + q * hd, hd);
            }
            qm.push_back(same ? prev_qm[q] : lab::evaluate(r.prep[q], pq, r.o.data() + q * hd, oq, hd, ws));
          }
          p.swap(prev_p);
          o.swap(prev_o);
          prev_qm = qm;
          const lab::metric_means mm = lab::mean_over(qm);
          std::vector<cell> row = {sc.name, m, static_cast<long long>(n), sc.bits_per_value(hd),
                                   static_cast<long long>(nq)};
          for (double v : mm.mean) row.emplace_back(v);
          row.emplace_back(static_cast<long long>(mm.nonfinite));
          row.emplace_back(fs.all);
          row.emplace_back(fs.shared);
          row.emplace_back(fs.outlier_rel_err);
          rows[i * NM + mi] = std::move(row);
        }
      }, [&](std::size_t i) {
        json a = json::array();
        for (std::size_t mi = 0; mi < NM; ++mi) a.push_back(encode_slot(rows[i * NM + mi]));
        return a;
      }, [&](std::size_t i, const json& a) {
        for (std::size_t mi = 0; mi < NM; ++mi) decode_slot(a.at(mi), rows[i * NM + mi]);
      });
    }
    if (partial_run(ctx)) return result{};  // a shard: the other shards' rows are not here

    // Rows in a fixed order: scheme, magnitude, context.
    result r;
    table t = output_schema();
    for (std::size_t si = 0; si < NS; ++si)
      for (std::size_t mi = 0; mi < NM; ++mi)
        for (std::size_t ci = 0; ci < NC; ++ci) t.rows.push_back(rows[(ci * NS + si) * NM + mi]);
    r.tables.push_back(t);

    // Setup record.
    r.setup["head_dim"] = (static_cast<long long>(hd));
    r.setup["heads"] = (1);
    r.setup["queries_per_cell"] = (static_cast<long long>(nq));
    r.setup["outlier_channels"] = (json(channels));
    r.setup["outlier_model"] = ("K[:, c] += +m/-m (alternating per channel) on every token, gain 1, no RoPE; queries zero on the "
                "outlier channels, so exact logits do not depend on m");
    json treatments = json::array();
    if (ctx.kv && treat)
      treatments = json::array({"key channel outliers +m/-m on outlier_channels (magnitudes)",
                                "queries zeroed on outlier_channels"});
    if (ctx.kv && !treat)
      r.setup["outlier_model"] = "none injected (--kv without --kv-treatments: the captured keys and queries as they "
                                 "are; k_flush_frac_shared and outlier_rel_err refer to outlier_channels all the same)";
    lab::record_qkv_source(ctx, r.setup, "independent N(0,1) (kvq::inject::generate_qkv at the longest context; shorter contexts are its prefixes; the same base tensors for every magnitude)", nq, treatments);
    r.setup["reference"] = ("double attention on the original float K/V");
    r.setup["emulated"] = ("fp32 attention on dequantized K/V (storage-only)");
    json sj = json::object();
    for (const auto& name : schemes) sj[name] = (scheme_named(name).description);
    r.setup["schemes"] = (sj);

    // Findings from the numbers.
    const std::size_t cidx_tau = column_index(t, "weighted_tau");
    const std::size_t col_flush_shared = column_index(t, "k_flush_frac_shared");
    const double mmax = *std::max_element(mags.begin(), mags.end());
    const long long nmax = *std::max_element(ctxs.begin(), ctxs.end());
    const long long nmin = *std::min_element(ctxs.begin(), ctxs.end());
    auto find_row = [&](const std::string& sch, double m, long long n) -> const std::vector<cell>* {
      for (const auto& row : t.rows)
        if (row[0].s == sch && row[1].d == m && row[2].i == n) return &row;
      return nullptr;
    };
    {
      std::vector<std::pair<double, std::string>> rank;
      for (const auto& sch : schemes) {
        auto* row = find_row(sch, mmax, nmax);
        if (row) rank.emplace_back((*row)[cidx_tau].d, sch);
      }
      // Highest first; NaN (emulated weights all tied) last.
      auto key = [](double v) { return std::isnan(v) ? -2.0 : v; };
      std::stable_sort(rank.begin(), rank.end(), [&](auto& a, auto& b) { return key(a.first) > key(b.first); });
      std::string line = "weighted tau at m=" + term_cell(cell(mmax)) + ", n=" + std::to_string(nmax) + ": ";
      for (std::size_t i = 0; i < rank.size(); ++i) {
        char b[96];
        std::snprintf(b, sizeof b, "%s%s %.4f", i ? ", " : "", rank[i].second.c_str(), rank[i].first);
        line += b;
      }
      r.findings.push_back(line);
    }
    if (mmax > 0) {
      std::string line = "share of K elements sharing a scale with an outlier that flush to 0 at m=" +
                         term_cell(cell(mmax)) + ": ";
      bool first = true;
      for (const auto& sch : schemes) {
        auto* row = find_row(sch, mmax, nmax);
        if (!row || std::isnan((*row)[col_flush_shared].d)) continue;
        char b[96];
        std::snprintf(b, sizeof b, "%s%s %.1f%%", first ? "" : ", ", sch.c_str(), 100 * (*row)[col_flush_shared].d);
        line += b;
        first = false;
      }
      r.findings.push_back(line);
    }
    if (nmax != nmin) {
      std::string line = "weighted tau from n=" + std::to_string(nmin) + " to n=" + std::to_string(nmax) +
                         " at m=" + term_cell(cell(mmax)) + ": ";
      bool first = true;
      for (const auto& sch : schemes) {
        auto* a = find_row(sch, mmax, nmin);
        auto* b = find_row(sch, mmax, nmax);
        if (!a || !b) continue;
        char buf[96];
        std::snprintf(buf, sizeof buf, "%s%s %.4f->%.4f", first ? "" : ", ", sch.c_str(), (*a)[cidx_tau].d,
                      (*b)[cidx_tau].d);
        line += buf;
        first = false;
      }
      r.findings.push_back(line);
    }
    return r;
  };
  return d;
}

}  // namespace kvq::study::outliers
