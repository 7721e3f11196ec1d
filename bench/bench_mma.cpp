// bench/bench_mma.cpp — tensor-core inner products d = a.b + c: the exact model
// (kvq::mma::dot, block_fma.hpp) against the fast path of kvq/mma/fast.hpp (dot_fast per
// product, and the checked dot_batch, which also checks every element's format) on the
// same inputs, in one run, with the rates and their ratio.
//
//   kvq_bench_mma [--quick] [--products=N] [--k=K] [Google Benchmark flags]
//
// Inputs: N inner products of length K (default 4096 x 128; --quick 256 x 128) of random
// finite values of the format with exponents in [-4, 4], c an fp32 (fp16 for fp16
// output) value. Before timing, every product of both paths is compared bit for bit;
// the program fails if any differs.
#include <kvq/mma.hpp>
#include <kvq/mma/batch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "bench_common.hpp"

#ifndef KVQ_BENCH_FLAGS
#define KVQ_BENCH_FLAGS "unknown"
#endif

namespace {

using namespace kvq::mma;

struct config {
  const char* label;
  arch a;
  input_format in;
  output_format out;
};

const config kConfigs[] = {
    {"sm_90 e4m3 -> fp32", arch::sm_90, input_format::e4m3, output_format::fp32},
    {"sm_90 e5m2 -> fp32", arch::sm_90, input_format::e5m2, output_format::fp32},
    {"sm_100 e4m3 -> fp32", arch::sm_100, input_format::e4m3, output_format::fp32},
    {"sm_89 e4m3 -> fp32", arch::sm_89, input_format::e4m3, output_format::fp32},
    {"sm_90 fp16 -> fp32", arch::sm_90, input_format::fp16, output_format::fp32},
    {"sm_90 bf16 -> fp32", arch::sm_90, input_format::bf16, output_format::fp32},
    {"sm_90 fp16 -> fp16", arch::sm_90, input_format::fp16, output_format::fp16},
};

// A random finite value of the format with exponent in [-4, 4] (normal numbers).
float random_value(std::uint64_t& s, input_format in) {
  const input_format_info fi = info(in);
  s = kvqbench::splitmix64(s);
  const int e = static_cast<int>(s % 9) - 4;
  const std::uint64_t m = (s >> 8) & ((std::uint64_t{1} << fi.mantissa_bits) - 1);
  float x = std::ldexp(static_cast<float>((std::uint64_t{1} << fi.mantissa_bits) + m), e - fi.mantissa_bits);
  if (in == input_format::e4m3 && std::fabs(x) > 448.0f) x = 448.0f;
  return ((s >> 40) & 1u) ? -x : x;
}

struct data {
  preset_info p{};
  input_format in{};
  std::vector<float> a, b, c, d;
};

std::size_t option_value(int& argc, char** argv, const char* key, std::size_t dflt) {
  std::size_t v = dflt;
  int w = 1;
  const std::size_t n = std::strlen(key);
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], key, n) == 0) {
      v = static_cast<std::size_t>(std::strtoull(argv[i] + n, nullptr, 10));
    } else {
      argv[w++] = argv[i];
    }
  }
  argc = w;
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t products = option_value(argc, argv, "--products=", 4096);
  const std::size_t K = option_value(argc, argv, "--k=", 128);
  const kvqbench::options o = kvqbench::init(argc, argv);
  if (o.quick) products = 256;
  if (products == 0 || K == 0 || K > 1000000) {
    std::fprintf(stderr, "--products and --k must be positive (k <= 1000000)\n");
    return 2;
  }
  std::printf("%zu inner products of length %zu, flags: %s\n", products, K, KVQ_BENCH_FLAGS);

  static std::vector<data> all;  // owned for the whole run: the benchmarks run after registration
  all.resize(sizeof kConfigs / sizeof kConfigs[0]);
  for (std::size_t ci = 0; ci < all.size(); ++ci) {
    const config& cf = kConfigs[ci];
    data& D = all[ci];
    D.p = get_preset(cf.a, cf.in, cf.out);
    D.in = cf.in;
    std::uint64_t s = 1000 + ci;
    D.a.resize(products * K);
    D.b.resize(products * K);
    D.c.resize(products);
    D.d.resize(products);
    for (float& x : D.a) x = random_value(s, cf.in);
    for (float& x : D.b) x = random_value(s, cf.in);
    for (float& x : D.c) x = cf.out == output_format::fp16 ? random_value(s, input_format::fp16) : random_value(s, input_format::bf16) * 3.0f;
    // Same bits first.
    dot_batch(D.p, D.in, D.a.data(), D.b.data(), D.c.data(), products, static_cast<int>(K), D.d.data());
    std::size_t differ = 0;
    for (std::size_t r = 0; r < products; ++r) {
      const float m = dot(D.p.params, D.in, D.a.data() + r * K, D.b.data() + r * K, static_cast<int>(K), D.c[r]);
      if (std::memcmp(&m, &D.d[r], sizeof m) != 0) ++differ;
    }
    std::printf("same bits, %s: %s\n", cf.label, differ == 0 ? "yes" : "NO");
    if (differ != 0) return 1;

    data* P = &D;
    const int k = static_cast<int>(K);
    const std::int64_t n = static_cast<std::int64_t>(products);
    benchmark::RegisterBenchmark((std::string("exact/") + cf.label).c_str(), [P, k, n](benchmark::State& st) {
      const std::size_t ks = static_cast<std::size_t>(k);
      for (auto _ : st) {
        for (std::size_t r = 0; r < P->d.size(); ++r)
          P->d[r] = dot(P->p.params, P->in, P->a.data() + r * ks, P->b.data() + r * ks, k, P->c[r]);
        benchmark::DoNotOptimize(P->d.data());
        benchmark::ClobberMemory();
      }
      st.SetItemsProcessed(st.iterations() * n);
    });
    benchmark::RegisterBenchmark((std::string("fast/") + cf.label).c_str(), [P, k, n](benchmark::State& st) {
      const std::size_t ks = static_cast<std::size_t>(k);
      for (auto _ : st) {
        for (std::size_t r = 0; r < P->d.size(); ++r)
          P->d[r] = dot_fast(P->p.params, P->in, P->a.data() + r * ks, P->b.data() + r * ks, k, P->c[r]);
        benchmark::DoNotOptimize(P->d.data());
        benchmark::ClobberMemory();
      }
      st.SetItemsProcessed(st.iterations() * n);
    });
    benchmark::RegisterBenchmark((std::string("batch/") + cf.label).c_str(), [P, k, n](benchmark::State& st) {
      for (auto _ : st) {
        dot_batch(P->p, P->in, P->a.data(), P->b.data(), P->c.data(), P->d.size(), k, P->d.data());
        benchmark::DoNotOptimize(P->d.data());
        benchmark::ClobberMemory();
      }
      st.SetItemsProcessed(st.iterations() * n);
    });
  }
  kvqbench::collecting_reporter rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  benchmark::Shutdown();

  std::printf("\ninner products of length %zu per second (one core)\n", K);
  std::printf("%-22s %14s %14s %14s %10s %10s\n", "", "exact model", "dot_fast", "dot_batch", "fast/exact",
              "batch/exact");
  const double np = static_cast<double>(products);
  for (const config& cf : kConfigs) {
    auto e = rep.seconds.find(std::string("exact/") + cf.label);
    auto f = rep.seconds.find(std::string("fast/") + cf.label);
    auto b = rep.seconds.find(std::string("batch/") + cf.label);
    if (e == rep.seconds.end() || f == rep.seconds.end() || b == rep.seconds.end()) continue;
    std::printf("%-22s %14.3e %14.3e %14.3e %10.1f %10.1f\n", cf.label, np / e->second, np / f->second,
                np / b->second, e->second / f->second, e->second / b->second);
  }
  std::printf("dot_batch also checks that every element is a value of its format.\n");
  return 0;
}
