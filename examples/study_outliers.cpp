// Standalone form of `kvq study outliers`: key channel outliers x KV-cache scheme x
// context length -> attention rank distortion and the share of K elements flushed to
// zero. The study itself (examples/studies/outliers.hpp) shows the library API: Q/K/V
// from kvq::inject, the schemes from kvq::block, attention from kvq::attention and the
// metrics from kvq::metrics.
//
//   study_outliers            the default grid (contexts 1k..128k; about a minute on 2 cores)
//   study_outliers --quick    a small grid (seconds)
// The kvq command runs the same study with more options (--out, --threads, grid overrides).
#include "studies/outliers.hpp"

int main(int argc, char** argv) {
  return kvq::study::run_standalone(kvq::study::outliers::definition(), argc, argv);
}
