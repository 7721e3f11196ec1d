// bench/bench_block.cpp — block-scaled quantization and dequantization of a large float
// array (N(0,1)) against a memcpy of the same array, per input element, in one run:
// NVFP4 (TransformerEngine, vLLM and torchao recipes, torchao single and two-level), MXFP4
// and MXFP8 e4m3 (each with the OCP floor and the cuBLAS/TE round-up scale rule).
//
//   kvq_bench_block [--mib=256] [--quick] [Google Benchmark flags]
//
// The timed quantize call uses the tensor-level value (NVFP4: the tensor amax) computed
// once beforehand, as a kernel that receives it from an earlier amax pass would; the
// amax pass itself is timed separately ("tensor amax").
//
// A second table times kvq::block::quantize_parallel / dequantize_parallel with 1 and 2
// threads (best wall time; the benchmark is not pinned to one core for it: run it without
// taskset, or with a core list) and prints the 1-thread / 2-thread ratio from the same run.
#include <kvq/block.hpp>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.hpp"

#ifndef KVQ_BENCH_FLAGS
#define KVQ_BENCH_FLAGS "unknown"
#endif

namespace {

template <class S>
struct scheme_buffers {
  S scheme{};
  kvq::block::buffer_sizes sz{};
  std::vector<std::uint8_t> codes;
  std::vector<typename S::scale_type> scales;
  std::vector<float> zeros;
  float tensor = 1.0f;
};

// A line of the thread-scaling table: the 1- and 2-thread benchmarks of one operation.
struct scaling_row {
  std::string label, one, two;
};

template <class S>
void register_scheme(const std::string& label, const std::vector<float>& in, std::vector<float>& out,
                     std::vector<kvqbench::row>& rows, std::vector<scaling_row>* scaling = nullptr) {
  // Owned for the whole run: the benchmarks run after registration.
  static scheme_buffers<S> b;
  const std::size_t n = in.size();
  b.sz = kvq::block::sizes_of(b.scheme, n);
  b.codes.assign(b.sz.code_bytes, 0);
  b.scales.assign(b.sz.scales, typename S::scale_type{});
  b.zeros.assign(b.sz.zeros, 0.0f);
  // Untimed first pass: computes the tensor value and fills the dequantize input.
  b.tensor = kvq::block::quantize(b.scheme, in.data(), n, kvq::block::tensor_value::computed(), b.codes.data(),
                                  b.codes.size(), b.scales.data(), b.scales.size(), b.zeros.data(), b.zeros.size());
  const float* x = in.data();
  float* y = out.data();
  auto per_value = [n](benchmark::State& st) {
    st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(n));
  };

  const std::string q = "quantize_" + label, d = "dequantize_" + label;
  benchmark::RegisterBenchmark(q.c_str(), [=](benchmark::State& st) {
    for (auto _ : st) {
      kvq::block::quantize(b.scheme, x, n, kvq::block::tensor_value::given(b.tensor), b.codes.data(), b.codes.size(),
                           b.scales.data(), b.scales.size(), b.zeros.data(), b.zeros.size());
      benchmark::DoNotOptimize(b.codes.data());
      benchmark::ClobberMemory();
    }
    per_value(st);
  })->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(d.c_str(), [=](benchmark::State& st) {
    for (auto _ : st) {
      kvq::block::dequantize(b.scheme, b.codes.data(), b.codes.size(), b.scales.data(), b.scales.size(),
                             b.zeros.data(), b.zeros.size(), b.tensor, y, n);
      benchmark::DoNotOptimize(y);
      benchmark::ClobberMemory();
    }
    per_value(st);
  })->Unit(benchmark::kMillisecond);

  if (scaling) {
    for (unsigned t : {1u, 2u}) {
      const std::string qt = q + "_threads" + std::to_string(t), dt = d + "_threads" + std::to_string(t);
      benchmark::RegisterBenchmark(qt.c_str(), [=](benchmark::State& st) {
        for (auto _ : st) {
          kvq::block::quantize_parallel(b.scheme, x, n, kvq::block::tensor_value::given(b.tensor), b.codes.data(),
                                        b.codes.size(), b.scales.data(), b.scales.size(), b.zeros.data(),
                                        b.zeros.size(), t);
          benchmark::DoNotOptimize(b.codes.data());
          benchmark::ClobberMemory();
        }
        per_value(st);
      })->Unit(benchmark::kMillisecond)->UseRealTime();
      benchmark::RegisterBenchmark(dt.c_str(), [=](benchmark::State& st) {
        for (auto _ : st) {
          kvq::block::dequantize_parallel(b.scheme, b.codes.data(), b.codes.size(), b.scales.data(), b.scales.size(),
                                          b.zeros.data(), b.zeros.size(), b.tensor, y, n, t);
          benchmark::DoNotOptimize(y);
          benchmark::ClobberMemory();
        }
        per_value(st);
      })->Unit(benchmark::kMillisecond)->UseRealTime();
    }
    scaling->push_back({"quantize " + label, q + "_threads1", q + "_threads2"});
    scaling->push_back({"dequantize " + label, d + "_threads1", d + "_threads2"});
  }

  char bits[32];
  std::snprintf(bits, sizeof bits, " (%.2f b/v)", kvq::block::bits_per_value(b.scheme));
  rows.push_back({"quantize " + label + bits, q, "memcpy", ""});
  rows.push_back({"dequantize " + label, d, "memcpy", ""});
}

}  // namespace

int main(int argc, char** argv) {
  const kvqbench::options opt = kvqbench::init(argc, argv);
  // Block sizes are 16 and 32: round the element count down to a multiple of 32.
  const std::size_t n = opt.values() / 32 * 32;

  const std::vector<float> in = kvqbench::normal_floats(n);
  std::vector<float> out(n, 0.0f);  // memcpy destination and dequantize output

  std::vector<kvqbench::row> rows{{"memcpy (float array)", "memcpy", "", ""}};
  kvqbench::register_memcpy("memcpy", in.data(), out.data(), n);
  benchmark::RegisterBenchmark("tensor_amax", [&in, n](benchmark::State& st) {
    for (auto _ : st) {
      float a = kvq::block::tensor_amax(in.data(), n, kvq::block::amax_nan::ignore);
      benchmark::DoNotOptimize(a);
    }
    st.SetItemsProcessed(static_cast<std::int64_t>(st.iterations()) * static_cast<std::int64_t>(n));
  })->Unit(benchmark::kMillisecond);
  rows.push_back({"tensor amax", "tensor_amax", "memcpy", ""});

  std::vector<scaling_row> scaling;
  register_scheme<kvq::block::nvfp4_te>("nvfp4_te", in, out, rows, &scaling);
  register_scheme<kvq::block::nvfp4_vllm<>>("nvfp4_vllm", in, out, rows);
  register_scheme<kvq::block::nvfp4_torchao>("nvfp4_torchao", in, out, rows);
  register_scheme<kvq::block::nvfp4_torchao_two_level>("nvfp4_torchao_two_level", in, out, rows);
  register_scheme<kvq::block::mxfp4_floor>("mxfp4_floor", in, out, rows, &scaling);
  register_scheme<kvq::block::mxfp4_rceil>("mxfp4_rceil", in, out, rows);
  register_scheme<kvq::block::mxfp8_e4m3_floor>("mxfp8_e4m3_floor", in, out, rows);
  register_scheme<kvq::block::mxfp8_e4m3_rceil>("mxfp8_e4m3_rceil", in, out, rows, &scaling);

  std::printf("kvq_bench_block: %zu values (%zu MiB of float), N(0,1), one thread%s\n", n, opt.mib,
              opt.quick ? " [--quick: timings not meaningful]" : "");
  std::printf("built with: %s\n", KVQ_BENCH_FLAGS);

  kvqbench::collecting_reporter rep;
  benchmark::RunSpecifiedBenchmarks(&rep);
  benchmark::Shutdown();

  kvqbench::print_table("Summary (best CPU time per iteration; per input element):", rep, rows, n);

  // Thread scaling: wall time, since the CPU time of a threaded run counts only the
  // calling thread. Same bits for every thread count (tests/block/test_block_parallel.cpp).
  std::printf("\nThread scaling, quantize_parallel / dequantize_parallel (best wall time per iteration; %u "
              "hardware threads):\n", std::thread::hardware_concurrency());
  std::printf("%-38s %12s %12s %12s\n", "", "1 thr ns/v", "2 thr ns/v", "1 thr/2 thr");
  for (const scaling_row& r : scaling) {
    const auto a = rep.wall_seconds.find(r.one), c = rep.wall_seconds.find(r.two);
    if (a == rep.wall_seconds.end() || c == rep.wall_seconds.end()) continue;
    const double ns1 = a->second * 1e9 / static_cast<double>(n), ns2 = c->second * 1e9 / static_cast<double>(n);
    std::printf("%-38s %12.3f %12.3f %12.2f\n", r.label.c_str(), ns1, ns2, a->second / c->second);
  }
  return 0;
}
