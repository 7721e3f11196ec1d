// Standalone form of `kvq study rotation`: key channel outliers with and without a Hadamard rotation before quantization, for
// per-tensor, per-token and per-block scaling.
// The study itself is examples/studies/rotation.hpp.
//
//   study_rotation            the default grid
//   study_rotation --quick    a small grid (seconds)
// The kvq command runs the same study with more options (--out, --threads, grid overrides).
#include "studies/rotation.hpp"

int main(int argc, char** argv) {
  return kvq::study::run_standalone(kvq::study::rotation::definition(), argc, argv);
}
