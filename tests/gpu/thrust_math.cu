// tests/gpu/thrust_math.cu — the device test suite of tests/device (device_checks.hpp) on
// Thrust's CUDA backend, part 3: kvq::math element-wise (float and double) and the
// fixed-shape tree reductions (whole-array chunked form and row forms) vs the serial
// functions on the host.
#include <string>
#include <vector>

#include "../device/device_checks.hpp"
#include "gpu_common.hpp"

namespace kvq_gpu {

void add_checks(report& rep, const char* stage, const std::vector<kvq_test::check_result>& results);  // thrust_convert.cu

void run_thrust_math(report& rep, const options& opt, deadline& dl) {
  if (dl.left() < 15.0) {
    rep.add("thrust", "cuda backend math and reductions", verdict::skipped, "time budget exhausted");
    return;
  }
  add_checks(rep, "thrust", kvq_test::all_math_checks(opt.quick ? (1u << 15) : (1u << 22)));
}

}  // namespace kvq_gpu
