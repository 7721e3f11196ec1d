// bench/bench_attention.cpp — the attention score pass q.k_t over every key, the inner
// loop of every study: the per-key streaming tree (one tree_dot per key, the kernels'
// former path) against the batched rows form (reduce::tree_dot_rows, the kernels' path
// now), in fp32 (the storage/emulated paths) and double (the reference). Before timing,
// the program checks that both give the same bits for every key and prints the check;
// the table gives keys x head_dim multiply-adds per second and the speedup, from one run.
//
//   kvq_bench_attention [--quick] [--keys=N] [--head-dim=D] [Google Benchmark flags]
#include "bench_common.hpp"

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

  register_pair<float>("fp32", q, K, s);
  register_pair<double>("double", q, K, s);
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
  return 0;
}
