// A 32k-token context with the three structures of the seed articles — persistent key
// channel outliers, an attention sink and a "citation" needle — attended in double
// precision and with the KV cache stored as NVFP4 (TransformerEngine recipe) and as
// FP8 e4m3 (per-tensor, scale 1, as vLLM stores it by default). Prints, per scheme, the
// rank-distortion metrics averaged over the queries and what happened to the needle.
//
//   needle_32k [tokens]      (default 32768; any multiple of 16)
//
// Everything is deterministic: the same seed gives the same bits on every machine.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <kvq/kvq.hpp>

namespace {

using kvq::matrix_f;

struct summary {
  double tau = 0, recall8 = 0, kl = 0, tv = 0, underflow = 0, flips = 0, needle_top1 = 0, retained = 0;
  std::size_t worst_needle_rank = 0;
};

template <class Emu>
summary measure(const kvq::attention::reference_attention& ref, const Emu& emu, const matrix_f& Q,
                const kvq::inject::scenario& sc) {
  namespace m = kvq::metrics;
  summary s;
  m::workspace ws(ref.tokens());
  std::size_t nq = 0;
  kvq::attention::compare(ref, emu, Q, [&](const kvq::attention::query_result& r) {
    const double* p = r.p_ref;
    const double* ph = r.p_emu;
    const std::size_t n = r.tokens;
    s.tau += m::kendall_tau_b(p, ph, n, ws.view());
    const std::size_t k = 8;
    m::topk_result tk;
    m::topk_metrics(p, ph, n, &k, 1, &tk, ws.view());
    s.recall8 += tk.recall;
    s.kl += m::kl_divergence(p, ph, n).value;
    s.tv += m::total_variation(p, ph, n);
    s.underflow += m::underflow(p, ph, n).fraction;
    s.flips += m::argmax_flip(p, ph, n);
    const auto& needle = sc.needle_tokens(0, r.index);
    const auto nm = m::needle_metrics(p, ph, n, needle.data(), needle.size());
    s.needle_top1 += nm.best_rank_emulated == 1 ? 1.0 : 0.0;
    s.retained += nm.retained;
    if (nm.best_rank_emulated > s.worst_needle_rank) s.worst_needle_rank = nm.best_rank_emulated;
    ++nq;
  });
  const double d = static_cast<double>(nq);
  s.tau /= d, s.recall8 /= d, s.kl /= d, s.tv /= d, s.underflow /= d, s.flips /= d, s.needle_top1 /= d,
      s.retained /= d;
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  const std::size_t tokens = argc > 1 ? std::strtoul(argv[1], nullptr, 10) : 32768;
  if (tokens < 64 || tokens % 16 != 0) {
    std::fprintf(stderr, "needle_32k: tokens must be a multiple of 16 and at least 64 (got %s)\n", argv[1]);
    return 2;
  }
  const std::size_t queries = 8;

  kvq::inject::scenario_config cfg;
  cfg.shape.tokens = tokens;
  cfg.shape.queries = queries;
  cfg.shape.head_dim = 128;
  cfg.shape.seed = 2024;
  cfg.outliers = kvq::inject::channel_outlier_config{};  // 4 key channels x20, pre-RoPE
  cfg.outliers->gain = 40.0f;
  cfg.sinks = kvq::inject::sink_config{};  // token 0, logit gap 8 over the rest
  for (std::size_t r = 0; r < queries; ++r) {
    kvq::inject::scenario_needle nd;  // a 3-token citation span per query, margin 2 over the background
    nd.row = r;
    nd.position = tokens / 4 + r * (tokens / 16);
    nd.length = 3;
    nd.margin = 2.0;
    cfg.needles.push_back(nd);
  }
  const kvq::inject::scenario sc = kvq::inject::build_scenario(cfg);
  const matrix_f& K = sc.data.k[0];
  const matrix_f& V = sc.data.v[0];
  const matrix_f& Q = sc.data.q[0];
  std::printf("context %zu tokens, head_dim 128, %zu queries; key outliers on channels", tokens, queries);
  for (std::size_t c : sc.heads[0].outliers->channels) std::printf(" %zu", c);
  std::printf(" (max |K| %.1f), sink token 0 (gap 8), 3-token needle per query (margin 2)\n\n",
              static_cast<double>(sc.heads[0].outliers->max_abs));

  const kvq::attention::reference_attention ref(K, V);
  struct row {
    std::string name;
    kvq::attention::kv_codec codec;
  };
  // Every scheme from the library's registry (kvq/kv/registry.hpp), by name.
  using kvq::attention::codec_of;
  const std::vector<row> rows = {
      {"bf16", codec_of("bf16")},
      {"fp8 e4m3, per-tensor scale 1", codec_of("fp8_e4m3")},
      {"fp8 e5m2, per-tensor scale 1", codec_of("fp8_e5m2")},
      {"nvfp4 (TransformerEngine)", codec_of("nvfp4_te")},
      {"mxfp4 (OCP floor)", codec_of("mxfp4_floor")},
  };
  std::printf("%-30s %8s %8s %10s %8s %9s %7s %11s %9s %10s\n", "KV storage", "tau_b", "recall8", "KL", "TV",
              "underflow", "flips", "needle@1", "retained", "worst rank");
  for (const row& r : rows) {
    kvq::attention::storage_options opt;
    opt.codec = r.codec;
    const kvq::attention::storage_attention emu(K, V, opt);
    const summary s = measure(ref, emu, Q, sc);
    std::printf("%-30s %8.5f %8.3f %10.3e %8.5f %9.5f %7.3f %11.3f %9.4f %10zu\n", r.name.c_str(), s.tau, s.recall8,
                s.kl, s.tv, s.underflow, s.flips, s.needle_top1, s.retained, s.worst_needle_rank);
  }
  std::printf(
      "\ntau_b: Kendall rank correlation of p and p^ over all keys; recall8: top-8 overlap; KL(p||p^) nats;\n"
      "TV: total variation; underflow: share of keys with p>0 but p^=0; flips: argmax changes;\n"
      "needle@1: share of queries whose needle stays the most-attended key; retained: needle mass p^/p.\n");
  return 0;
}
