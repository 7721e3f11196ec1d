// Standalone form of `kvq study rotation`: key channel outliers with and without a Hadamard rotation before quantization, for
// per-tensor, per-token and per-block scaling.
// The study itself is examples/studies/rotation.hpp.
//
//   study_rotation            the default grid
//   study_rotation --quick    a small grid (seconds)
// The kvq command runs the same study with more options (--out, --threads, grid overrides).
// The study is compiled once in the kvq_studies library (examples/compiled_studies/), which
// the kvq command links too.
#include "compiled_studies/compiled_studies.hpp"

int main(int argc, char** argv) {
  return kvq::study::compiled::run_standalone(kvq::study::compiled::rotation(), argc, argv);
}
