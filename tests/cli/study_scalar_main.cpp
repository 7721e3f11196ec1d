// kvq_study_scalar: `kvq study NAME ...` compiled the other way round from the kvq
// command: no target flags (baseline x86-64) and Eigen's explicit vectorisation off
// (EIGEN_DONT_VECTORIZE), so Eigen's reductions and decompositions take their scalar
// paths, and the baseline copy of the bulk kernels (kvq/core/isa.hpp: the portable
// encoders, not the F16C ones). The test study_scalar_bits runs every study's --quick grid
// here and in the kvq command (-march=native: AVX2/AVX-512 packets, the x86-64-v3 kernels
// where the CPU has them) with --digits 17 and requires the same CSV bytes, i.e. the same
// bits for every number the studies report.
#include <studies.hpp>

#include <kvq/core/isa.hpp>
#include <kvq/study/cli.hpp>

#include <cstdio>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: kvq_study_scalar <study> [options of kvq study <study>]\n");
    return 2;
  }
  const kvq::study::study_def* def = kvq::study::find_study(argv[1]);
  if (def == nullptr) {
    std::fprintf(stderr, "kvq_study_scalar: unknown study '%s'\n", argv[1]);
    return 2;
  }
  kvq::set_isa(kvq::isa::baseline);
  // run_standalone reads the options after argv[0]: drop the study name.
  std::vector<char*> args{argv[0]};
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  return kvq::study::run_standalone(*def, static_cast<int>(args.size()), args.data());
}
