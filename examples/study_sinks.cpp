// Standalone form of `kvq study sinks`: attention sinks (count x logit gap) under each storage scheme and FlashAttention-3's FP8
// attention (P scale S = 1 or 256, forward or reverse KV order), with and without
// keeping the sinks in bf16 (IntactKV).
// The study itself is examples/studies/sinks.hpp.
//
//   study_sinks            the default grid
//   study_sinks --quick    a small grid (seconds)
// The kvq command runs the same study with more options (--out, --threads, grid overrides).
// The study is compiled once in the kvq_studies library (examples/compiled_studies/), which
// the kvq command links too.
#include "compiled_studies/compiled_studies.hpp"

int main(int argc, char** argv) {
  return kvq::study::compiled::run_standalone(kvq::study::compiled::sinks(), argc, argv);
}
