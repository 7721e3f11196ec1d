// tests/gpu/main.cu — the GPU check driver: runs every GPU-vs-emulator check, prints one
// line per check and a summary, and writes the summary to a file.
//
//   kvq_gpu_check [--budget SECONDS] [--host-budget SECONDS] [--quick] [--summary FILE]
//
// Exit status: 0 if nothing failed (HWDIFF lines, hardware behaviour that differs from
// CUDA's host functions only on NaN inputs or NaN payloads, are findings, not failures),
// 1 if a check failed, 2 on bad arguments, 3 on a CUDA error, 77 if there is no GPU.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <cuda_runtime.h>

#include "cuda_check.hpp"
#include "gpu_common.hpp"

int main(int argc, char** argv) {
  kvq_gpu::options opt;
  kvq_gpu::deadline dl;
  std::string summary_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--budget" && has_value) dl.budget_s = std::atof(argv[++i]);
    else if (a == "--host-budget" && has_value) opt.host_budget_s = std::atof(argv[++i]);
    else if (a == "--summary" && has_value) summary_path = argv[++i];
    else if (a == "--quick") opt.quick = true;
    else {
      std::fprintf(stderr, "usage: %s [--budget S] [--host-budget S] [--quick] [--summary FILE]\n", argv[0]);
      return 2;
    }
  }
  int ndev = 0;
  const cudaError_t dev_err = cudaGetDeviceCount(&ndev);
  if (dev_err != cudaSuccess || ndev == 0) {
    // Not a failure of kvq: there is nothing to check on this machine (ctest: skipped).
    std::printf("kvq GPU check: no usable CUDA device (%s); nothing checked\n",
                dev_err != cudaSuccess ? cudaGetErrorString(dev_err) : "0 devices");
    return 77;
  }
  const kvq_gpu::device_caps caps = kvq_gpu::query_caps();
  std::printf("kvq GPU check on %s (sm_%d%d): hardware fp8 cvt in this build: %s, e2m1/e3m2/e2m3/ue8m0 cvt: %s\n",
              caps.name.c_str(), caps.cc_major, caps.cc_minor, caps.hw_fp8 ? "yes" : "no", caps.hw_short ? "yes" : "no");
  std::fflush(stdout);

  kvq_gpu::report rep;
  kvq_gpu::run_sweeps(rep, opt, caps, dl);
  kvq_gpu::run_hw_decode(rep, caps);
  kvq_gpu::run_math_sweeps(rep, opt, dl);
  kvq_gpu::run_nvfp4_kernel(rep, opt, dl);
  kvq_gpu::run_thrust_convert(rep, opt, dl);
  kvq_gpu::run_thrust_decode(rep, opt, dl);
  kvq_gpu::run_thrust_block(rep, opt, dl);
  kvq_gpu::run_thrust_block_kv(rep, opt, dl);
  kvq_gpu::run_thrust_math(rep, opt, dl);
  kvq_gpu::run_thrust_attention(rep, opt, dl);

  const int pass = rep.count(kvq_gpu::verdict::pass), fail = rep.count(kvq_gpu::verdict::fail),
            hwdiff = rep.count(kvq_gpu::verdict::hwdiff), skip = rep.count(kvq_gpu::verdict::skipped);
  char line[256];
  std::snprintf(line, sizeof line, "kvq GPU check: %d passed, %d failed, %d hardware differences (NaN only), %d skipped in %.1f s",
                pass, fail, hwdiff, skip, dl.elapsed());
  std::printf("\n%s\n", line);
  if (!summary_path.empty()) {
    if (FILE* f = std::fopen(summary_path.c_str(), "w")) {
      std::fprintf(f, "device: %s (sm_%d%d), hardware fp8 cvt: %s, short-format cvt: %s\n", caps.name.c_str(),
                   caps.cc_major, caps.cc_minor, caps.hw_fp8 ? "yes" : "no", caps.hw_short ? "yes" : "no");
      for (const auto& e : rep.entries)
        std::fprintf(f, "[%s] %s %s: %s\n", kvq_gpu::to_string(e.v), e.stage.c_str(), e.name.c_str(), e.detail.c_str());
      std::fprintf(f, "%s\n", line);
      std::fclose(f);
    } else {
      std::fprintf(stderr, "cannot write %s\n", summary_path.c_str());
    }
  }
  return fail ? 1 : 0;
}
