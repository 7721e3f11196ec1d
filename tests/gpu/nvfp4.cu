// tests/gpu/nvfp4.cu — the warp-level NVFP4 kernel (kvq/device/nvfp4_kernel.cuh) vs the
// emulator (kvq::block::quantize with nvfp4_te, serial on the host), codes and scales
// byte for byte. Plain CUDA runtime, no Thrust, so this unit compiles in seconds for
// every target (tests/device/nvcc_check.sh); the Thrust path of the same recipe and the
// device tensor amax are checked in thrust_block.cu.
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include <kvq/block.hpp>
#include <kvq/device/hash.hpp>
#include <kvq/device/nvfp4_kernel.cuh>

#include "../device/inputs.hpp"
#include "cuda_check.hpp"
#include "gpu_common.hpp"

namespace kvq_gpu {
namespace {

std::size_t count_diff(const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b, std::size_t& first) {
  std::size_t n = 0;
  first = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
    if (a[i] != b[i]) {
      if (n == 0) first = i;
      ++n;
    }
  }
  return n + (a.size() > b.size() ? a.size() - b.size() : b.size() - a.size());
}

void one_case(report& rep, const std::string& name, const std::vector<float>& x, const kvq::block::nvfp4_te& scheme) {
  namespace kb = kvq::block;
  const std::size_t n = x.size();
  // Emulator, serial on the host.
  const kb::buffer_sizes z = kb::sizes_of(scheme, n);
  std::vector<std::uint8_t> codes(z.code_bytes), scales(z.scales);
  const auto t0 = std::chrono::steady_clock::now();
  const float amax = kb::quantize(scheme, x.data(), n, kb::tensor_value::computed(), codes.data(), codes.size(),
                                  scales.data(), scales.size());
  const double host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Kernel, given the emulator's tensor amax (the device's own amax reduction is
  // checked against the emulator in thrust_block.cu).
  float* d_x = nullptr;
  std::uint8_t *d_codes = nullptr, *d_scales = nullptr;
  KVQ_CUDA_CHECK(cudaMalloc(&d_x, n * sizeof(float)));
  KVQ_CUDA_CHECK(cudaMalloc(&d_codes, z.code_bytes + 4));
  KVQ_CUDA_CHECK(cudaMalloc(&d_scales, z.scales + 1));
  KVQ_CUDA_CHECK(cudaMemcpy(d_x, x.data(), n * sizeof(float), cudaMemcpyHostToDevice));
  KVQ_CUDA_CHECK(cudaMemset(d_codes, 0xA5, z.code_bytes + 4));  // poison: unwritten bytes show up
  KVQ_CUDA_CHECK(cudaMemset(d_scales, 0xA5, z.scales + 1));
  cudaEvent_t e0, e1;
  KVQ_CUDA_CHECK(cudaEventCreate(&e0));
  KVQ_CUDA_CHECK(cudaEventCreate(&e1));
  KVQ_CUDA_CHECK(cudaEventRecord(e0));
  KVQ_CUDA_CHECK(kvq::device::launch_nvfp4_te_quantize(d_x, n, amax, scheme, d_codes, d_scales));
  KVQ_CUDA_CHECK(cudaEventRecord(e1));
  KVQ_CUDA_CHECK(cudaEventSynchronize(e1));
  float ms = 0.0f;
  KVQ_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
  KVQ_CUDA_CHECK(cudaEventDestroy(e0));
  KVQ_CUDA_CHECK(cudaEventDestroy(e1));
  std::vector<std::uint8_t> k_codes(z.code_bytes + 4), k_scales(z.scales + 1);
  KVQ_CUDA_CHECK(cudaMemcpy(k_codes.data(), d_codes, k_codes.size(), cudaMemcpyDeviceToHost));
  KVQ_CUDA_CHECK(cudaMemcpy(k_scales.data(), d_scales, k_scales.size(), cudaMemcpyDeviceToHost));
  KVQ_CUDA_CHECK(cudaFree(d_x));
  KVQ_CUDA_CHECK(cudaFree(d_codes));
  KVQ_CUDA_CHECK(cudaFree(d_scales));
  // Nothing written past the end (the poison bytes after the buffers survive).
  const bool no_overrun = k_codes[z.code_bytes] == 0xA5 && k_scales[z.scales] == 0xA5;
  k_codes.resize(z.code_bytes);
  k_scales.resize(z.scales);

  std::size_t fc = 0, fs = 0;
  const std::size_t dc = count_diff(k_codes, codes, fc), ds = count_diff(k_scales, scales, fs);
  const double gbps = ms > 0 ? static_cast<double>(n) * 4.5625 / (ms * 1e6) : 0.0;
  std::string d = std::to_string(n) + " elements; kernel: code bytes differing " + std::to_string(dc) +
                  ", scales differing " + std::to_string(ds) + (no_overrun ? "" : "; WROTE PAST THE END") + "; kernel " +
                  std::to_string(ms).substr(0, 6) + " ms (" + std::to_string(gbps).substr(0, 6) + " GB/s), host " +
                  std::to_string(host_s).substr(0, 5) + " s; codes hash " +
                  hex(kvq::device::content_hash_serial(k_codes.data(), k_codes.size()));
  if (dc) d += "; first code diff at byte " + std::to_string(fc) + ": kernel " + hex(k_codes[fc], 2) + " emulator " + hex(codes[fc], 2);
  if (ds) d += "; first scale diff at block " + std::to_string(fs) + ": kernel " + hex(k_scales[fs], 2) + " emulator " + hex(scales[fs], 2);
  rep.add("nvfp4", name, (dc || ds || !no_overrun) ? verdict::fail : verdict::pass, d);
}

}  // namespace

void run_nvfp4_kernel(report& rep, const options& opt, deadline& dl) {
  if (dl.left() < 20.0) {
    rep.add("nvfp4", "nvfp4_te kernel", verdict::skipped, "time budget exhausted");
    return;
  }
  namespace kb = kvq::block;
  kb::nvfp4_te rcp;
  kb::nvfp4_te div;
  div.inverse = kb::nvfp4_te::inverse_rule::enc_div_scale;
  // KV-like data with outliers, NaN/Inf, zero and subnormal blocks; an odd number of
  // 16-block warp groups (tail), and a large tensor.
  const std::size_t big_rows = opt.quick ? (1u << 12) : (1u << 18);  // x 128 = 32M elements
  const std::vector<float> kv = kvq_test::kv_inputs(big_rows, 128);
  one_case(rep, "nvfp4_te rcp_of_product, KV-like " + std::to_string(big_rows) + "x128", kv, rcp);
  one_case(rep, "nvfp4_te enc_div_scale, KV-like " + std::to_string(big_rows) + "x128", kv, div);
  const std::vector<float> tail(kv.begin(), kv.begin() + 16 * 37);  // 37 blocks: partial warp group
  one_case(rep, "nvfp4_te rcp_of_product, 37 blocks", tail, rcp);
  // Every float bit pattern's neighbourhood: a sweep-like tensor (NaN/Inf/subnormals everywhere).
  const std::vector<float> sweep = kvq_test::float_inputs(opt.quick ? (1u << 16) : (1u << 24));
  std::vector<float> sw(sweep.begin(), sweep.begin() + static_cast<std::ptrdiff_t>(sweep.size() / 16 * 16));
  one_case(rep, "nvfp4_te rcp_of_product, all-class inputs", sw, rcp);
}

}  // namespace kvq_gpu
