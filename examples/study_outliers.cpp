// Standalone form of `kvq study outliers`: key channel outliers x KV-cache scheme x
// context length -> attention rank distortion and the share of K elements flushed to
// zero. The study itself (examples/studies/outliers.hpp) shows the library API: Q/K/V
// from kvq::inject, the schemes from kvq::block, attention from kvq::attention and the
// metrics from kvq::metrics.
//
//   study_outliers            the default grid (contexts 1k..128k; about a minute on 2 cores)
//   study_outliers --quick    a small grid (seconds)
// The kvq command runs the same study with more options (--out, --threads, grid overrides).
// The study is compiled once in the kvq_studies library (examples/compiled_studies/), which
// the kvq command links too.
#include "compiled_studies/compiled_studies.hpp"

int main(int argc, char** argv) {
  return kvq::study::compiled::run_standalone(kvq::study::compiled::outliers(), argc, argv);
}
