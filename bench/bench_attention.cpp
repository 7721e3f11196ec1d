// bench/bench_attention.cpp — the attention score pass q.k_t over every key, the inner
// loop of every study: the per-key streaming tree (one tree_dot per key, the kernels'
// former path) against the batched rows form (reduce::tree_dot_rows, the kernels' path
// now), in fp32 (the storage/emulated paths) and double (the reference). Before timing,
// the program checks that both give the same bits for every key and prints the check;
// the table gives keys x head_dim multiply-adds per second and the speedup, from one run.
//
// The second table is what the studies run: the whole weight vectors (scores, scale,
// max, exp, sum, division) of a batch of queries on the same keys, per query
// (attention::reference_weights / storage_weights, one query after another) against the
// batched form (attention::reference_weights_batch / storage_weights_batch), and the
// parts of the batched form alone (scores by reduce::tree_dot_block; exp by math::exp
// against math::exp_n), all checked for the same bits first.
//
//   kvq_bench_attention [--quick] [--keys=N] [--head-dim=D] [--queries=B] [Google Benchmark flags]
#include "bench_common.hpp"

#include <kvq/attention/weights_batch.hpp>
#include <kvq/core/reduce.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct shape {
  std::size_t keys = 32768;
  std::size_t d = 128;
  std::size_t queries = 16;
};

template <class Acc>
void scores_per_key(const float* q, const float* K, std::size_t n, std::size_t d, Acc* out) {
  for (std::size_t t = 0; t < n; ++t) out[t] = kvq::reduce::tree_dot<Acc>(q, K + t * d, d);
}

template <class Acc>
void scores_rows(const float* q, const float* K, std::size_t n, std::size_t d, Acc* out) {
  kvq::reduce::tree_dot_rows<Acc>(q, K, d, n, d, out);
}

template <class Acc>
bool same_bits(const std::vector<Acc>& a, const std::vector<Acc>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(Acc)) == 0;
}

template <class Acc>
void register_pair(const std::string& tag, const std::vector<float>& q, const std::vector<float>& K, shape s) {
  auto reg = [&](const std::string& name, void (*f)(const float*, const float*, std::size_t, std::size_t, Acc*)) {
    benchmark::RegisterBenchmark(name.c_str(), [f, &q, &K, s](benchmark::State& st) {
      std::vector<Acc> out(s.keys);
      for (auto _ : st) {
        f(q.data(), K.data(), s.keys, s.d, out.data());
        benchmark::DoNotOptimize(out.data());
        benchmark::ClobberMemory();
      }
      st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(s.keys * s.d));
    })->Unit(benchmark::kMillisecond);
  };
  reg("scores_per_key_" + tag, &scores_per_key<Acc>);
  reg("scores_rows_" + tag, &scores_rows<Acc>);
}

// The weight vectors of s.queries queries (p: queries x keys doubles).
void weights_per_query_reference(const std::vector<float>& Q, const std::vector<float>& K, shape s, double* p, float*) {
  const kvq::attention::rows_view<float> kv{K.data(), s.keys, s.d, s.d};
  for (std::size_t v = 0; v < s.queries; ++v) kvq::attention::reference_weights(Q.data() + v * s.d, kv, p + v * s.keys);
}
void weights_batch_reference(const std::vector<float>& Q, const std::vector<float>& K, shape s, double* p, float*) {
  const kvq::attention::rows_view<float> kv{K.data(), s.keys, s.d, s.d};
  kvq::attention::reference_weights_batch(Q.data(), s.d, s.queries, kv, p);
}
void weights_per_query_fp32(const std::vector<float>& Q, const std::vector<float>& K, shape s, double* p, float* f) {
  const kvq::attention::rows_view<float> kv{K.data(), s.keys, s.d, s.d};
  for (std::size_t v = 0; v < s.queries; ++v)
    kvq::attention::storage_weights(Q.data() + v * s.d, kv, 0.0883883f, f, p + v * s.keys);
}
void weights_batch_fp32(const std::vector<float>& Q, const std::vector<float>& K, shape s, double* p, float* f) {
  const kvq::attention::rows_view<float> kv{K.data(), s.keys, s.d, s.d};
  kvq::attention::storage_weights_batch(Q.data(), s.d, s.queries, kv, 0.0883883f, f, p);
}
void scores_block_reference(const std::vector<float>& Q, const std::vector<float>& K, shape s, double* p, float*) {
  kvq::reduce::tree_dot_block<double>(Q.data(), s.d, s.queries, K.data(), s.d, s.keys, s.d, p, s.keys);
}
void scores_block_fp32(const std::vector<float>& Q, const std::vector<float>& K, shape s, double*, float* f) {
  kvq::reduce::tree_dot_block<float>(Q.data(), s.d, s.queries, K.data(), s.d, s.keys, s.d, f, s.keys);
}
// exp over queries x keys softmax arguments (in [-30, 0], as after the max subtraction)
void exp_scalar(const std::vector<float>&, const std::vector<float>&, shape s, double* p, float*) {
  const std::size_t n = s.queries * s.keys;
  for (std::size_t i = 0; i < n; ++i) p[i] = kvq::math::exp(-30.0 * static_cast<double>(i % 1000) / 1000.0);
}
void exp_array(const std::vector<float>&, const std::vector<float>&, shape s, double* p, float*) {
  const std::size_t n = s.queries * s.keys;
  for (std::size_t i = 0; i < n; ++i) p[i] = -30.0 * static_cast<double>(i % 1000) / 1000.0;
  kvq::math::exp_n(p, p, n);
}

using weights_fn = void (*)(const std::vector<float>&, const std::vector<float>&, shape, double*, float*);

void register_weights(const std::string& name, weights_fn f, const std::vector<float>& Q, const std::vector<float>& K,
                      shape s) {
  benchmark::RegisterBenchmark(name.c_str(), [f, &Q, &K, s](benchmark::State& st) {
    std::vector<double> p(s.queries * s.keys);
    std::vector<float> sc(s.queries * s.keys);
    for (auto _ : st) {
      f(Q, K, s, p.data(), sc.data());
      benchmark::DoNotOptimize(p.data());
      benchmark::DoNotOptimize(sc.data());
      benchmark::ClobberMemory();
    }
    st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()) *
                         static_cast<std::int64_t>(s.queries * s.keys * s.d));
  })->Unit(benchmark::kMillisecond);
}

bool weights_same(weights_fn a, weights_fn b, const std::vector<float>& Q, const std::vector<float>& K, shape s) {
  std::vector<double> pa(s.queries * s.keys), pb(s.queries * s.keys);
  std::vector<float> fa(s.queries * s.keys), fb(s.queries * s.keys);
  a(Q, K, s, pa.data(), fa.data());
  b(Q, K, s, pb.data(), fb.data());
  return same_bits(pa, pb);
}

std::size_t option_value(int& argc, char** argv, const char* name, std::size_t dflt) {
  const std::size_t len = std::strlen(name);
  std::size_t v = dflt;
  int w = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], name, len) == 0) {
      v = static_cast<std::size_t>(std::strtoull(argv[i] + len, nullptr, 10));
      if (v == 0) {
        std::fprintf(stderr, "%s must be a positive number\n", name);
        std::exit(2);
      }
    } else {
      argv[w++] = argv[i];
    }
  }
  argc = w;
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  shape s;
  s.keys = option_value(argc, argv, "--keys=", s.keys);
  s.d = option_value(argc, argv, "--head-dim=", s.d);
  s.queries = option_value(argc, argv, "--queries=", s.queries);
  const kvqbench::options o = kvqbench::init(argc, argv);
  if (o.quick) s.keys = 1024;

  const std::vector<float> K = kvqbench::normal_floats(s.keys * s.d, 7);
  const std::vector<float> q = kvqbench::normal_floats(s.d, 8);

  // Same bits first: the batched form is only a faster evaluation of the same tree.
  std::vector<float> f0(s.keys), f1(s.keys);
  std::vector<double> d0(s.keys), d1(s.keys);
  scores_per_key<float>(q.data(), K.data(), s.keys, s.d, f0.data());
  scores_rows<float>(q.data(), K.data(), s.keys, s.d, f1.data());
  scores_per_key<double>(q.data(), K.data(), s.keys, s.d, d0.data());
  scores_rows<double>(q.data(), K.data(), s.keys, s.d, d1.data());
  const bool same_f = same_bits(f0, f1), same_d = same_bits(d0, d1);
  std::printf("keys %zu, head_dim %zu, flags: %s\n", s.keys, s.d, KVQ_BENCH_FLAGS);
  std::printf("same bits, fp32: %s; double: %s\n", same_f ? "yes" : "NO", same_d ? "yes" : "NO");
  if (!same_f || !same_d) return 1;
  const std::vector<float> Q = kvqbench::normal_floats(s.queries * s.d, 9);
  const bool same_wr = weights_same(&weights_per_query_reference, &weights_batch_reference, Q, K, s);
  const bool same_wf = weights_same(&weights_per_query_fp32, &weights_batch_fp32, Q, K, s);
  const bool same_exp = weights_same(&exp_scalar, &exp_array, Q, K, s);
  std::printf("same bits, weights of %zu queries, reference: %s; fp32: %s; exp: %s\n", s.queries,
              same_wr ? "yes" : "NO", same_wf ? "yes" : "NO", same_exp ? "yes" : "NO");
  if (!same_wr || !same_wf || !same_exp) return 1;

  register_pair<float>("fp32", q, K, s);
  register_pair<double>("double", q, K, s);
  register_weights("weights_per_query_reference", &weights_per_query_reference, Q, K, s);
  register_weights("weights_batch_reference", &weights_batch_reference, Q, K, s);
  register_weights("scores_block_reference", &scores_block_reference, Q, K, s);
  register_weights("weights_per_query_fp32", &weights_per_query_fp32, Q, K, s);
  register_weights("weights_batch_fp32", &weights_batch_fp32, Q, K, s);
  register_weights("scores_block_fp32", &scores_block_fp32, Q, K, s);
  register_weights("exp_scalar", &exp_scalar, Q, K, s);
  register_weights("exp_array", &exp_array, Q, K, s);
  kvqbench::collecting_reporter rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  benchmark::Shutdown();

  std::printf("\nscores q.k_t over %zu keys x %zu dims (one core)\n", s.keys, s.d);
  std::printf("%-10s %16s %16s %10s\n", "", "per-key MAC/s", "rows MAC/s", "speedup");
  const double macs = static_cast<double>(s.keys * s.d);
  for (const char* tag : {"fp32", "double"}) {
    auto a = rep.seconds.find(std::string("scores_per_key_") + tag);
    auto b = rep.seconds.find(std::string("scores_rows_") + tag);
    if (a == rep.seconds.end() || b == rep.seconds.end()) continue;
    std::printf("%-10s %16.3e %16.3e %10.2f\n", tag, macs / a->second, macs / b->second, a->second / b->second);
  }
  std::printf("\nweights of %zu queries over %zu keys x %zu dims (one core): queries x keys x dims per second\n",
              s.queries, s.keys, s.d);
  std::printf("%-10s %14s %14s %10s %16s %14s\n", "", "per-query", "batch", "speedup", "batch scores only",
              "scores share");
  const double qmacs = static_cast<double>(s.queries * s.keys * s.d);
  for (const char* tag : {"reference", "fp32"}) {
    auto a = rep.seconds.find(std::string("weights_per_query_") + tag);
    auto b = rep.seconds.find(std::string("weights_batch_") + tag);
    auto c = rep.seconds.find(std::string("scores_block_") + tag);
    if (a == rep.seconds.end() || b == rep.seconds.end() || c == rep.seconds.end()) continue;
    std::printf("%-10s %14.3e %14.3e %10.2f %16.3e %13.0f%%\n", tag, qmacs / a->second, qmacs / b->second,
                a->second / b->second, qmacs / c->second, 100.0 * c->second / b->second);
  }
  auto e0 = rep.seconds.find("exp_scalar");
  auto e1 = rep.seconds.find("exp_array");
  if (e0 != rep.seconds.end() && e1 != rep.seconds.end()) {
    const double ne = static_cast<double>(s.queries * s.keys);
    std::printf("exp (double, %zu arguments): math::exp %.2f ns each, math::exp_n %.2f ns each, speedup %.2f\n",
                s.queries * s.keys, 1e9 * e0->second / ne, 1e9 * e1->second / ne, e0->second / e1->second);
  }
  return 0;
}
