// tests/gpu/thrust_block.cu — the device test suite of tests/device (device_checks.hpp) on
// Thrust's CUDA backend: block quantize/dequantize of the NVFP4 and MX recipes of
// kvq/block.hpp vs the serial emulator on the host (the FP8/INT8 KV and KIVI recipes and
// the tensor amax reduction: thrust_block_kv.cu).
#include <string>
#include <vector>

#include "../device/device_checks.hpp"
#include "gpu_common.hpp"

namespace kvq_gpu {

void add_checks(report& rep, const char* stage, const std::vector<kvq_test::check_result>& results);  // thrust_convert.cu

void run_thrust_block(report& rep, const options& opt, deadline& dl) {
  if (dl.left() < 15.0) {
    rep.add("thrust", "cuda backend NVFP4/MX block schemes", verdict::skipped, "time budget exhausted");
    return;
  }
  add_checks(rep, "thrust", kvq_test::block_checks_part<0>(opt.quick ? 96 : 8192));
}

}  // namespace kvq_gpu
