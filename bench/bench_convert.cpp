// bench/bench_convert.cpp — float -> e4m3 / e5m2 / e2m1 encode (RNE, satfinite) and
// code -> float decode over a large array of normally distributed floats, against a
// memcpy of the same float array and, when the CUDA toolkit is present, against CUDA's
// host conversion functions (cuda_fp8.h / cuda_fp4.h), all in one run.
//
//   kvq_bench_convert [--mib=256] [--quick] [Google Benchmark flags]
//
// After the timings it checks that kvq produced the same codes as CUDA for the whole
// array (a mismatch here would mean the exhaustive tests missed something).
#include <kvq/format.hpp>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#if defined(KVQ_HAVE_CUDA_ORACLE)
#include <cuda_fp4.h>
#include <cuda_fp8.h>
#endif

#include "bench_common.hpp"

#ifndef KVQ_BENCH_FLAGS
#define KVQ_BENCH_FLAGS "unknown"
#endif

namespace {

struct fmt_e4m3 {
  using F = kvq::fmt::e4m3;
  static constexpr const char* name = "e4m3";
#if defined(KVQ_HAVE_CUDA_ORACLE)
  static std::uint8_t cuda_encode(float x) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3); }
  static float cuda_decode(std::uint8_t c) { return __half2float(__half(__nv_cvt_fp8_to_halfraw(c, __NV_E4M3))); }
#endif
};
struct fmt_e5m2 {
  using F = kvq::fmt::e5m2;
  static constexpr const char* name = "e5m2";
#if defined(KVQ_HAVE_CUDA_ORACLE)
  static std::uint8_t cuda_encode(float x) { return __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E5M2); }
  static float cuda_decode(std::uint8_t c) { return __half2float(__half(__nv_cvt_fp8_to_halfraw(c, __NV_E5M2))); }
#endif
};
struct fmt_e2m1 {
  using F = kvq::fmt::e2m1;
  static constexpr const char* name = "e2m1";
#if defined(KVQ_HAVE_CUDA_ORACLE)
  // e2m1 has no Inf/NaN: it always saturates, like kvq's satfinite.
  static std::uint8_t cuda_encode(float x) { return __nv_cvt_float_to_fp4(x, __NV_E2M1, cudaRoundNearest); }
  static float cuda_decode(std::uint8_t c) { return __half2float(__half(__nv_cvt_fp4_to_halfraw(c, __NV_E2M1))); }
#endif
};

struct buffers {
  std::vector<float> in;                         // the input array
  std::vector<float> out_f;                      // memcpy destination and decode output
  std::vector<std::vector<std::uint8_t>> codes;  // per format: kvq's codes (decode input)
  std::vector<std::vector<std::uint8_t>> cuda;   // per format: CUDA's codes
  std::vector<bool> cuda_ran;
};

template <class T>
void register_format(buffers& b, std::size_t k, std::vector<kvqbench::row>& rows) {
  using F = typename T::F;
  const std::size_t n = b.in.size();
  const float* in = b.in.data();
  std::uint8_t* codes = b.codes[k].data();
  float* out = b.out_f.data();
  const std::string nm = T::name;

  // The timed loops (kvq's bulk API: the scalar encode/decode instantiated with fixed
  // policies, so the compiler can vectorise).
  auto per_value = [n](benchmark::State& st) {
    st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(n));
  };
  benchmark::RegisterBenchmark(("encode_" + nm + "/kvq").c_str(), [=](benchmark::State& st) {
    for (auto _ : st) {
      kvq::encode_n<F>(in, n, codes, kvq::rounding::nearest_even, kvq::overflow::satfinite);
      benchmark::DoNotOptimize(codes);
      benchmark::ClobberMemory();
    }
    per_value(st);
  })->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(("decode_" + nm + "/kvq").c_str(), [=](benchmark::State& st) {
    for (auto _ : st) {
      kvq::decode_n<F>(codes, n, out);
      benchmark::DoNotOptimize(out);
      benchmark::ClobberMemory();
    }
    per_value(st);
  })->Unit(benchmark::kMillisecond);

  std::string cuda_enc, cuda_dec;
#if defined(KVQ_HAVE_CUDA_ORACLE)
  cuda_enc = "encode_" + nm + "/cuda_host";
  cuda_dec = "decode_" + nm + "/cuda_host";
  std::uint8_t* cuda = b.cuda[k].data();
  std::vector<bool>* ran = &b.cuda_ran;
  benchmark::RegisterBenchmark(cuda_enc.c_str(), [=](benchmark::State& st) {
    for (auto _ : st) {
      for (std::size_t i = 0; i < n; ++i) cuda[i] = T::cuda_encode(in[i]);
      benchmark::DoNotOptimize(cuda);
      benchmark::ClobberMemory();
    }
    (*ran)[k] = true;
    per_value(st);
  })->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(cuda_dec.c_str(), [=](benchmark::State& st) {
    for (auto _ : st) {
      for (std::size_t i = 0; i < n; ++i) out[i] = T::cuda_decode(codes[i]);
      benchmark::DoNotOptimize(out);
      benchmark::ClobberMemory();
    }
    per_value(st);
  })->Unit(benchmark::kMillisecond);
#endif

  rows.push_back({"encode " + nm + " kvq", "encode_" + nm + "/kvq", "memcpy", cuda_enc});
  if (!cuda_enc.empty()) rows.push_back({"encode " + nm + " CUDA host", cuda_enc, "memcpy", ""});
  rows.push_back({"decode " + nm + " kvq", "decode_" + nm + "/kvq", "memcpy", cuda_dec});
  if (!cuda_dec.empty()) rows.push_back({"decode " + nm + " CUDA host", cuda_dec, "memcpy", ""});
}

}  // namespace

int main(int argc, char** argv) {
  const kvqbench::options opt = kvqbench::init(argc, argv);
  const std::size_t n = opt.values();

  buffers b;
  b.in = kvqbench::normal_floats(n);
  b.out_f.assign(n, 0.0f);  // touch every page before timing
  b.codes.assign(3, std::vector<std::uint8_t>(n, 0));
  b.cuda.assign(3, std::vector<std::uint8_t>(n, 0));
  b.cuda_ran.assign(3, false);
  // Decode benchmarks read kvq's codes; fill them even if encode is filtered out.
  kvq::encode_n<kvq::fmt::e4m3>(b.in.data(), n, b.codes[0].data());
  kvq::encode_n<kvq::fmt::e5m2>(b.in.data(), n, b.codes[1].data());
  kvq::encode_n<kvq::fmt::e2m1>(b.in.data(), n, b.codes[2].data());

  std::vector<kvqbench::row> rows{{"memcpy (float array)", "memcpy", "", ""}};
  kvqbench::register_memcpy("memcpy", b.in.data(), b.out_f.data(), n);
  register_format<fmt_e4m3>(b, 0, rows);
  register_format<fmt_e5m2>(b, 1, rows);
  register_format<fmt_e2m1>(b, 2, rows);

  std::printf("kvq_bench_convert: %zu values (%zu MiB of float), N(0,1), one thread%s\n", n, opt.mib,
              opt.quick ? " [--quick: timings not meaningful]" : "");
  std::printf("built with: %s\n", KVQ_BENCH_FLAGS);
#if !defined(KVQ_HAVE_CUDA_ORACLE)
  std::printf("CUDA toolkit not found at build time: no CUDA host-function rows\n");
#endif

  kvqbench::collecting_reporter rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  benchmark::Shutdown();

  kvqbench::print_table("Summary (best CPU time per iteration):", rep, rows, n);

  int status = 0;
  const char* names[3] = {"e4m3", "e5m2", "e2m1"};
  for (std::size_t k = 0; k < 3; ++k) {
    if (!b.cuda_ran[k]) continue;
    std::size_t mismatches = 0;
    for (std::size_t i = 0; i < n; ++i) mismatches += b.codes[k][i] != b.cuda[k][i];
    std::printf("%s: kvq vs CUDA host codes over the array: %zu mismatches\n", names[k], mismatches);
    if (mismatches) status = 1;
  }
  return status;
}
