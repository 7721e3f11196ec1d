// A study of your own on kvq's study engine (include/kvq/study/): how much does the KV
// scheme move the attention of N(0, 1) data whose keys have a larger spread? Grid:
// scheme x key standard deviation x context; per cell the mean rank and distribution
// metrics of the library's suite over the queries. It runs like every kvq study:
//
//   my_study [--quick] [--out DIR] [--threads N] [--seed S] [--schemes a,b] [--k-std 1,4]
//
// and writes my_study.csv / my_study.json with --out. Phases: grid -> tasks -> one task
// -> aggregate (rows in grid order, so the CSV is the same for any --threads).
#include <kvq/attention.hpp>
#include <kvq/inject.hpp>
#include <kvq/metrics.hpp>
#include <kvq/study.hpp>

#include <string>
#include <vector>

namespace ks = kvq::study;

ks::study_def my_study() {
  ks::study_def d;
  d.name = "my_study";
  d.summary = "scheme x key spread x context -> attention distortion";
  d.description = "N(0,1) queries and values, keys N(0, k_std^2); fp32 attention on the scheme's\n"
                  "dequantized K/V against double attention on the originals.";
  d.params = {
      {"schemes", ks::param_kind::name_list, "bf16,fp8_e4m3,nvfp4_te,mxfp4_rceil", "bf16,nvfp4_te", "KV schemes",
       kvq::kv::scheme_names(), 0, 0, "scheme"},
      {"k-std", ks::param_kind::real_list, "1,4,16", "1,4", "standard deviation of the keys", {}, 1e-3, 1e3, "spread"},
      {"contexts", ks::param_kind::int_list, "1k,8k", "1k", "context lengths", {}, 2, 1 << 20, "context length"},
      {"queries", ks::param_kind::integer, "8", "2", "queries per cell", {}, 1, 4096, "query count"},
  };
  ks::table schema;
  schema.columns = {{"scheme", "KV scheme"}, {"k_std", "key standard deviation"}, {"context", "tokens"}};
  for (const auto& c : ks::lab::query_metric_columns()) schema.columns.push_back({c.first, c.second});
  d.outputs = {schema};

  d.run = [schema](const ks::context& ctx) {
    const auto& schemes = ctx.cfg.names("schemes");
    const auto& stds = ctx.cfg.reals("k-std");
    const auto& ctxs = ctx.cfg.ints("contexts");
    const std::size_t nq = static_cast<std::size_t>(ctx.cfg.integer("queries")), hd = 64;
    const std::size_t NS = schemes.size(), NK = stds.size(), NC = ctxs.size();
    std::vector<std::vector<ks::cell>> rows(NS * NK * NC);  // one slot per task
    ks::run_tasks(rows.size(), {}, ctx.threads, ctx.prog, [&](std::size_t i) {
      const std::size_t si = i / (NK * NC), ki = (i / NC) % NK, ci = i % NC;
      kvq::inject::qkv_config g;
      g.tokens = static_cast<std::size_t>(ctxs[ci]);
      g.queries = nq;
      g.head_dim = hd;
      g.seed = ctx.cfg.seed;
      g.k_std = stds[ki];
      const kvq::inject::qkv x = kvq::inject::generate_qkv(g);
      const kvq::attention::reference_attention ref(x.k[0], x.v[0]);
      kvq::attention::storage_options so;
      so.codec = kvq::attention::codec_of(schemes[si]);
      const kvq::attention::storage_attention emu(x.k[0], x.v[0], so);
      kvq::attention::workspace aws;
      kvq::metrics::workspace mws(g.tokens);
      std::vector<double> p(g.tokens), ph(g.tokens), o(hd);
      std::vector<float> oh(hd);
      std::vector<ks::lab::query_metrics> per_query;
      for (std::size_t q = 0; q < nq; ++q) {
        const float* qr = x.q[0].data() + q * hd;
        ref.run(qr, p.data(), o.data(), aws);
        emu.run(qr, ph.data(), oh.data(), aws);
        per_query.push_back(ks::lab::evaluate(p.data(), ph.data(), g.tokens, o.data(), oh.data(), hd, mws));
      }
      rows[i] = {schemes[si], stds[ki], ctxs[ci]};
      // Mean over queries by the studies' own rule (kvq/study/lab.hpp): the library's
      // fixed-order aggregate, an infinite KL kept infinite rather than averaged away.
      for (double m : ks::lab::mean_over(per_query).mean) rows[i].emplace_back(m);
    });
    ks::result r;
    ks::table t = schema;
    t.rows = rows;
    r.tables.push_back(t);
    r.setup["head_dim"] = hd;
    return r;
  };
  return d;
}

int main(int argc, char** argv) { return ks::run_standalone(my_study(), argc, argv); }
