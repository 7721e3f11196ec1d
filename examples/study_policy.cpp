// Standalone form of `kvq study policy`: tiered caches (bf16 sinks, recent window, citation spans; NVFP4/FP8 for the rest) on
// kvq::kv::layer_cache against uniform schemes: bits per value vs distortion.
// The study itself is examples/studies/policy.hpp.
//
//   study_policy            the default grid
//   study_policy --quick    a small grid (seconds)
// The kvq command runs the same study with more options (--out, --threads, grid overrides).
// The study is compiled once in the kvq_studies library (examples/compiled_studies/), which
// the kvq command links too.
#include "compiled_studies/compiled_studies.hpp"

int main(int argc, char** argv) {
  return kvq::study::compiled::run_standalone(kvq::study::compiled::policy(), argc, argv);
}
