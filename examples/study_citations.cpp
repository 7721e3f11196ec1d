// Standalone form of `kvq study citations`: the falsification test of the first seed article: false-citation rate of low-precision
// KV caches by context length, with Wilson intervals and the verdict against 0.2 pp
// beyond 32k tokens (the default grid takes several minutes on 2 cores).
// The study itself is examples/studies/citations.hpp.
//
//   study_citations            the default grid
//   study_citations --quick    a small grid (seconds)
// The kvq command runs the same study with more options (--out, --threads, grid overrides).
// The study is compiled once in the kvq_studies library (examples/compiled_studies/), which
// the kvq command links too.
#include "compiled_studies/compiled_studies.hpp"

int main(int argc, char** argv) {
  return kvq::study::compiled::run_standalone(kvq::study::compiled::citations(), argc, argv);
}
