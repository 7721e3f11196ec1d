// tests/gpu/thrust_attention.cu — the device test suite of tests/device (device_checks.hpp)
// on Thrust's CUDA backend: the attention kernels (double reference, storage fp32/bf16,
// FlashAttention-3 FP8 forward/reverse) for a batch of queries and the per-query rank and
// distribution metrics, vs the serial functions on the host (softmax weights, outputs,
// metrics: element by element and by hash).
#include <string>
#include <vector>

#include "../device/device_checks.hpp"
#include "gpu_common.hpp"

namespace kvq_gpu {

void add_checks(report& rep, const char* stage, const std::vector<kvq_test::check_result>& results);  // thrust_convert.cu

void run_thrust_attention(report& rep, const options& opt, deadline& dl) {
  if (dl.left() < 15.0) {
    rep.add("thrust", "cuda backend attention and metrics", verdict::skipped, "time budget exhausted");
    return;
  }
  // Short and long contexts; the long one is what the studies run (one query per work item).
  add_checks(rep, "thrust", kvq_test::attention_metrics_checks(16, 300, 64));
  if (!opt.quick && dl.left() > 30.0) add_checks(rep, "thrust", kvq_test::attention_metrics_checks(64, 32768, 128));
}

}  // namespace kvq_gpu
