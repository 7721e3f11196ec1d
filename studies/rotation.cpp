// studies/rotation.cpp — key channel outliers with and without a Hadamard rotation of
// the head dimension before quantization (incoherent processing: QuaRot, QuIP#), for
// per-tensor, per-token and per-block scaling.
//
// Question: the outlier study shows block scales owned by an outlier channel; a
// rotation spreads each outlier over all channels. Which scalings does it rescue?
//
// Setup: the data of the outliers study (N(0,1) Q/K/V, `outlier-channels` key channels
// offset by +-m, queries zero on them, so exact logits do not depend on m). Emulation:
// kvq::attention::storage_attention with hadamard = true rotates K and V rows (and the
// query) by H_d/sqrt(d) before the scheme and rotates the output back; exact attention is
// unchanged by the rotation, so every difference is quantization. The flushed-to-zero
// share is measured in the stored (rotated) basis.
//
// With --kv FILE (docs/kv-input.md) Q/K/V are one captured head instead of the N(0, 1)
// draws (head_dim must still be a power of two): the model's own queries (the last
// captured positions) and keys, causal attention (--non-causal: all keys), no outliers
// and no query zeroing unless --kv-treatments asks for them.
#include "studies.hpp"

#include <kvq/study.hpp>
#include <kvq/study/kv_source.hpp>
#include <kvq/study/lab.hpp>
#include <kvq/study/schemes.hpp>

#include <kvq/attention/hadamard.hpp>
#include <kvq/attention/variants.hpp>
#include <kvq/inject/generate.hpp>
#include <kvq/inject/patterns.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace kvq::study::rotation {

using kvq::matrix_f;

inline std::string scaling_of(const scheme_spec& s) {
  switch (s.grouping(kv_role::key)) {
    case scale_grouping::none: return "none";
    case scale_grouping::tensor: return "per-tensor";
    case scale_grouping::channel: return "per-channel groups";
    case scale_grouping::row_blocks: return s.block ? "per-block " + std::to_string(s.block) : "per-token";
  }
  return "?";
}

inline table output_schema() {
  table t;
  t.title = "Hadamard rotation vs none, per scheme/scaling, outlier magnitude and context (means over queries)";
  t.columns = {{"scheme", "KV-cache scheme"},
               {"scaling", "how the scheme scales K: per-tensor, per-token, per-block B, per-channel groups"},
               {"rotation", "none or hadamard (H_d/sqrt(d) on K, V and q before quantization)"},
               {"magnitude", "key channel-outlier offset m (0 = none)"},
               {"context", "context length in tokens"},
               {"queries", "queries averaged", false}};
  for (const auto& c : lab::query_metric_columns()) {
    const std::string n = c.first;
    t.columns.push_back({c.first, c.second, n == "weighted_tau" || n == "kl"});
  }
  t.columns.push_back({"nonfinite_queries", "queries with a NaN/Inf output or infinite KL (not averaged in)", false});
  t.columns.push_back({"k_flush_frac", "share of nonzero stored K elements (rotated basis if rotated) flushed to 0"});
  return t;
}

study_def definition() {
  study_def d;
  d.name = "rotation";
  d.summary = "key channel outliers with and without a Hadamard rotation, per-tensor vs per-token vs per-block scaling";
  d.description =
      "The outliers study's data, stored with and without a normalised Walsh-Hadamard rotation of the head\n"
      "dimension before quantization (kvq::attention::storage_attention, hadamard = true). The rotation\n"
      "spreads every channel outlier over all channels, so block scales are no longer owned by one channel.\n"
      "head_dim must be a power of two.\n"
      "With --kv FILE: the model's own queries (the last captured positions) and keys, causal attention, no\n"
      "outliers injected and no query zeroed (--magnitudes fixed at 0); --kv-treatments injects the outliers\n"
      "and zeroes the queries on their channels as in the outliers study; --non-causal: all keys.";
  d.params = {
      scheme_param("schemes", "fp8_e4m3_cal,fp8_per_token_head,mxfp8_e4m3_rceil,nvfp4_te,mxfp4_rceil,kivi_int4",
                   "fp8_e4m3_cal,nvfp4_te,mxfp4_rceil", "KV-cache schemes"),
      {"magnitudes", param_kind::real_list, "0,10,100,1000", "0,100", "key channel-outlier magnitudes m", {}, 0, 1e30,
       "outlier magnitude"},
      {"contexts", param_kind::int_list, "4k,32k", "1k", "context lengths in tokens", {}, 2, 1 << 22,
       "context length"},
      {"head-dim", param_kind::integer, "128", "", "head dimension d (a power of two)", {}, 2, 4096, "head dimension"},
      {"queries", param_kind::integer, "4", "2", "queries per cell", {}, 1, 1 << 20, "query count"},
      {"outlier-channels", param_kind::integer, "4", "", "number of outlier channels", {}, 1, 4096,
       "outlier channel count"},
  };
  d.outputs = {output_schema()};
  d.kv.accepted = true;
  d.kv.treatment_params = {{"magnitudes", "0"}};
  d.validate = [](const config& c) {
    const long long hd = c.integer("head-dim");
    if (!kvq::attention::is_pow2(static_cast<std::size_t>(hd)))
      throw usage_error("--head-dim " + std::to_string(hd) +
                        " is not a power of two (allowed: 2, 4, ..., 4096; the Hadamard rotation needs one)");
    check_head_dim(c.names("schemes"), hd);
    if (c.integer("outlier-channels") > hd)
      throw usage_error("--outlier-channels " + std::to_string(c.integer("outlier-channels")) + " exceeds --head-dim " +
                        std::to_string(hd) + " (allowed: 1 to head_dim)");
  };
  d.run = [](const context& ctx) {
    const config& cfg = ctx.cfg;
    const auto& schemes = cfg.names("schemes");
    const auto& mags = cfg.reals("magnitudes");
    const auto& ctxs = cfg.ints("contexts");
    const std::size_t hd = static_cast<std::size_t>(cfg.integer("head-dim"));
    const std::size_t nq = static_cast<std::size_t>(cfg.integer("queries"));
    const std::size_t NC = ctxs.size(), NM = mags.size(), NS = schemes.size();
    const std::size_t nmax = static_cast<std::size_t>(*std::max_element(ctxs.begin(), ctxs.end()));

    kvq::inject::qkv_config qc;
    qc.tokens = nmax;
    qc.queries = nq;
    qc.head_dim = hd;
    qc.seed = cfg.seed;
    qc.threads = ctx.threads;
    const kvq::inject::qkv base = lab::study_qkv(ctx, qc);
    kvq::inject::channel_outlier_config oc0;
    oc0.random_count = static_cast<std::size_t>(cfg.integer("outlier-channels"));
    oc0.seed = cfg.seed;
    oc0.gain = 1.0f;
    const std::vector<std::size_t> channels = kvq::inject::outlier_channels(oc0, hd);
    // As in the outliers study; a captured head keeps the model's own queries and keys
    // unless --kv-treatments asks for the zeroing and the outliers.
    const bool treat = lab::kv_treated(ctx);
    matrix_f Qm = base.q[0];
    if (treat)
      for (Eigen::Index r = 0; r < Qm.rows(); ++r)
        for (std::size_t c : channels) Qm(r, static_cast<Eigen::Index>(c)) = 0.0f;

    // One task per (context, magnitude): reference once, then every scheme x rotation.
    std::vector<std::vector<std::vector<cell>>> rows(NC * NM);
    std::vector<double> cost(NC * NM);
    for (std::size_t i = 0; i < cost.size(); ++i) cost[i] = double(ctxs[i / NM]);
    run_sharded_tasks(ctx, cost.size(), cost, [&](std::size_t i) {
      const std::size_t n = static_cast<std::size_t>(ctxs[i / NM]);
      const double m = mags[i % NM];
      matrix_f K = base.k[0].topRows(static_cast<Eigen::Index>(n));
      const matrix_f V = base.v[0].topRows(static_cast<Eigen::Index>(n));
      if (m > 0 && treat) {
        kvq::inject::channel_outlier_config oc = oc0;
        oc.channels = channels;
        for (std::size_t c = 0; c < channels.size(); ++c) oc.offsets.push_back(static_cast<float>(c % 2 ? -m : m));
        kvq::inject::inject_channel_outliers(K, oc);
      }
      const kvq::attention::reference_attention ref(K, V);
      kvq::attention::workspace aws;
      // Every query's rows at once (run_prefix_batch: each query's run_prefix bits): query
      // q's weights at q * n, its outputs at q * hd.
      std::vector<std::size_t> keys(nq);
      for (std::size_t q = 0; q < nq; ++q) keys[q] = lab::keys_seen(ctx, base.query_positions, q, n);
      std::vector<kvq::attention::query_status> st(nq);
      std::vector<double> pr(nq * n), orf(nq * hd);
      ref.run_prefix_batch(Qm.data(), hd, nq, keys.data(), pr.data(), n, orf.data(), hd, st.data(), aws);
      matrix_f Krot = K;
      for (Eigen::Index r = 0; r < Krot.rows(); ++r) kvq::attention::hadamard_rotate(&Krot(r, 0), hd);
      std::vector<double> p(nq * n);
      std::vector<float> o(nq * hd);
      kvq::metrics::workspace ws(n);
      for (std::size_t si = 0; si < NS; ++si) {
        const scheme_spec& sc = scheme_named(schemes[si]);
        for (int rot = 0; rot < 2; ++rot) {
          kvq::attention::storage_options so;
          so.codec = kvq::attention::codec_of(sc);
          so.hadamard = rot == 1;
          const kvq::attention::storage_attention att(K, V, so);
          const matrix_f& stored_in = rot ? Krot : K;
          std::size_t nz = 0, fl = 0;
          for (Eigen::Index e = 0; e < stored_in.size(); ++e)
            if (stored_in.data()[e] != 0.0f) {
              ++nz;
              fl += att.keys().data()[e] == 0.0f;
            }
          att.run_prefix_batch(Qm.data(), hd, nq, keys.data(), p.data(), n, o.data(), hd, st.data(), aws);
          std::vector<lab::query_metrics> qm;
          for (std::size_t q = 0; q < nq; ++q)
            qm.push_back(lab::evaluate(pr.data() + q * n, p.data() + q * n, keys[q], orf.data() + q * hd,
                                       o.data() + q * hd, hd, ws));
          const lab::metric_means mm = lab::mean_over(qm);
          std::vector<cell> row = {sc.name, scaling_of(sc), rot ? "hadamard" : "none", m, ctxs[i / NM],
                                   static_cast<long long>(nq)};
          for (double v : mm.mean) row.emplace_back(v);
          row.emplace_back(static_cast<long long>(mm.nonfinite));
          row.emplace_back(nz ? double(fl) / double(nz) : 0.0);
          rows[i].push_back(std::move(row));
        }
      }
    }, [&](std::size_t i) { return encode_slot(rows[i]); },
       [&](std::size_t i, const json& a) { decode_slot(a, rows[i]); });
    if (partial_run(ctx)) return result{};  // a shard: the other shards' rows are not here

    result r;
    table t = output_schema();
    for (std::size_t si = 0; si < NS; ++si)
      for (std::size_t rot = 0; rot < 2; ++rot)
        for (std::size_t mi = 0; mi < NM; ++mi)
          for (std::size_t ci = 0; ci < NC; ++ci) t.rows.push_back(rows[ci * NM + mi][si * 2 + rot]);
    r.tables.push_back(t);

    r.setup["head_dim"] = (static_cast<long long>(hd));
    r.setup["queries_per_cell"] = (static_cast<long long>(nq));
    r.setup["outlier_channels"] = (json(channels));
    r.setup["data"] = ("as the outliers study: N(0,1) Q/K/V, offsets +-m on the outlier channels, queries zero there");
    if (ctx.kv) {  // the captured head replaces the N(0,1) draws
      json treatments = json::array();
      if (treat) {
        r.setup["data"] = "as the outliers study on captured Q/K/V: offsets +-m on the outlier channels, queries zero there";
        treatments = json::array({"key channel outliers +m/-m on outlier_channels (magnitudes)",
                                  "queries zeroed on outlier_channels"});
      } else {
        r.setup["data"] = "captured Q/K/V as they are (no outliers, no query zeroing)";
      }
      lab::record_qkv_source(ctx, r.setup, "", nq, treatments);
    }
    r.setup["rotation"] = ("kvq::attention::hadamard_rotate (normalised Walsh-Hadamard) on K, V and q rows before the "
                            "scheme; output rotated back");
    r.setup["reference"] = ("double attention on the original K/V");

    const double mmax = *std::max_element(mags.begin(), mags.end());
    const long long nbig = *std::max_element(ctxs.begin(), ctxs.end());
    const std::size_t c_w = column_index(t, "weighted_tau"), c_f = column_index(t, "k_flush_frac");
    std::string line = "weighted tau without -> with rotation at m=" + term_cell(cell(mmax)) + ", n=" +
                       std::to_string(nbig) + ": ";
    bool first = true;
    for (const auto& sch : schemes) {
      const std::vector<cell>*a = nullptr, *b = nullptr;
      for (const auto& row : t.rows)
        if (row[0].s == sch && row[3].d == mmax && row[4].i == nbig) (row[2].s == "none" ? a : b) = &row;
      if (!a || !b) continue;
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s%s %.4f -> %.4f (flushed %.1f%% -> %.1f%%)", first ? "" : ", ", sch.c_str(),
                    (*a)[c_w].d, (*b)[c_w].d, 100 * (*a)[c_f].d, 100 * (*b)[c_f].d);
      line += buf;
      first = false;
    }
    r.findings.push_back(line);
    return r;
  };
  return d;
}

}  // namespace kvq::study::rotation
