// NVFP4 attention against the reference, with the metrics suite: the newcomer path.
#include <cstdio>
#include <string>
#include <vector>

#include <kvq/attention.hpp>
#include <kvq/inject.hpp>
#include <kvq/metrics.hpp>

int main() {
  // 1. A synthetic head: 4096 tokens x 128, 8 queries, RoPE, 4 key outlier channels x20.
  kvq::inject::scenario_config c;
  c.shape.tokens = 4096;
  c.shape.head_dim = 128;
  c.shape.queries = 8;
  c.shape.seed = 1;
  c.outliers = kvq::inject::channel_outlier_config{};
  const kvq::inject::scenario sc = kvq::inject::build_scenario(c);
  const kvq::matrix_f& K = sc.data.k[0];  // KV head 0: tokens x head_dim
  const kvq::matrix_f& V = sc.data.v[0];
  const kvq::matrix_f& Q = sc.data.q[0];  // its queries: queries x head_dim

  // 2. The reference: double attention on the original K and V.
  const kvq::attention::reference_attention ref(K, V);

  namespace m = kvq::metrics;
  for (const std::string name : {"bf16", "fp8_e4m3", "nvfp4_te", "mxfp4_rceil"}) {
    // 3. The emulated path: K and V stored in a registry scheme, fp32 attention math.
    kvq::attention::storage_options so;
    so.codec = kvq::attention::codec_of(name);
    const kvq::attention::storage_attention emu(K, V, so);

    // 4. Compare query by query. query_result holds raw pointers into per-thread
    //    buffers, valid only during the call: evaluate the metrics right here.
    m::workspace ws(ref.tokens());
    std::vector<double> wtau, recall8, kl;
    kvq::attention::compare(ref, emu, Q, [&](const kvq::attention::query_result& r) {
      const m::query_metrics qm =
          m::evaluate_query(r.p_ref, r.p_emu, r.tokens, r.o_ref, r.o_emu, r.head_dim, ws.view());
      wtau.push_back(qm.wtau);
      recall8.push_back(qm.recall[0]);
      kl.push_back(qm.kl);
    });

    // 5. Summarise over the queries (NaN/inf are counted apart, not averaged in).
    const m::summary t = m::aggregate(wtau, m::better::higher);
    const m::summary r8 = m::aggregate(recall8, m::better::higher);
    const m::summary k = m::aggregate(kl, m::better::lower);
    std::printf("%-12s weighted_tau %.4f  recall@8 %.3f  KL %.2e nats\n", name.c_str(), t.mean, r8.mean, k.mean);
  }
}
