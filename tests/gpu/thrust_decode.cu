// tests/gpu/thrust_decode.cu — the device test suite of tests/device (device_checks.hpp) on
// Thrust's CUDA backend: encode of double inputs, decode of every code of every format,
// packed e2m1 encode/decode, vs the serial emulator on the host.
#include <string>
#include <vector>

#include "../device/device_checks.hpp"
#include "gpu_common.hpp"

namespace kvq_gpu {

void add_checks(report& rep, const char* stage, const std::vector<kvq_test::check_result>& results);  // thrust_convert.cu

void run_thrust_decode(report& rep, const options& opt, deadline& dl) {
  if (dl.left() < 20.0) {
    rep.add("thrust", "cuda backend encode (f64), decode, packed", verdict::skipped, "time budget exhausted");
    return;
  }
  add_checks(rep, "thrust", kvq_test::conversion_checks_part<1>(opt.quick ? (1u << 16) : (1u << 22)));
}

}  // namespace kvq_gpu
