// tests/gpu/thrust_convert.cu — the device test suite of tests/device (device_checks.hpp)
// on Thrust's CUDA backend: encode of float inputs (every format, rounding and overflow
// policy, stochastic, round trip), compared element by element and by content hash with
// the serial emulator on the host. The rest of the suite is split over thrust_decode.cu,
// thrust_block.cu and thrust_math.cu: separate translation units compile in parallel.
#include <string>
#include <vector>

#include "../device/device_checks.hpp"
#include "gpu_common.hpp"

namespace kvq_gpu {

void add_checks(report& rep, const char* stage, const std::vector<kvq_test::check_result>& results) {
  for (const auto& r : results) {
    rep.add(stage, r.name, r.ok() ? verdict::pass : verdict::fail,
            std::to_string(r.n) + " elements, " + std::to_string(r.mismatches) + " differ" +
                (r.mismatches ? " (first at " + std::to_string(r.first_mismatch) + ")" : std::string()) + ", hash " +
                hex(r.device_hash) + (r.device_hash == r.serial_hash ? " = cpu" : " != cpu " + hex(r.serial_hash)));
  }
}

void run_thrust_convert(report& rep, const options& opt, deadline& dl) {
  if (dl.left() < 20.0) {
    rep.add("thrust", "cuda backend encode (f32)", verdict::skipped, "time budget exhausted");
    return;
  }
  add_checks(rep, "thrust", kvq_test::conversion_checks_part<0>(opt.quick ? (1u << 16) : (1u << 22)));
}

}  // namespace kvq_gpu
