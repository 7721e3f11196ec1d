// tests/gpu/thrust_block_kv.cu — the device test suite of tests/device (device_checks.hpp)
// on Thrust's CUDA backend: block quantize/dequantize of the FP8/INT8 KV-cache and KIVI
// recipes of kvq/block.hpp and the device tensor amax under every NaN rule, vs the serial
// emulator on the host.
#include <string>
#include <vector>

#include "../device/device_checks.hpp"
#include "gpu_common.hpp"

namespace kvq_gpu {

void add_checks(report& rep, const char* stage, const std::vector<kvq_test::check_result>& results);  // thrust_convert.cu

void run_thrust_block_kv(report& rep, const options& opt, deadline& dl) {
  if (dl.left() < 15.0) {
    rep.add("thrust", "cuda backend FP8/KIVI block schemes", verdict::skipped, "time budget exhausted");
    return;
  }
  add_checks(rep, "thrust", kvq_test::block_checks_part<1>(opt.quick ? 96 : 8192));
}

}  // namespace kvq_gpu
