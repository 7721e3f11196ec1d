// main() of the standalone study programs (examples/study_<name>.cpp), compiled once.
#include "compiled_studies.hpp"

#include <kvq/study/cli.hpp>

int kvq::study::compiled::run_standalone(const study_def& def, int argc, char** argv) {
  return kvq::study::run_standalone(def, argc, argv);
}
