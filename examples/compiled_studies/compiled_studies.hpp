// compiled_studies/compiled_studies.hpp — the studies of examples/studies/, compiled once.
//
// The study headers are compiled in one translation unit of the kvq_studies library
// (examples/compiled_studies/studies.cpp); the kvq command, kvq-mpi and the standalone study
// programs link that library instead of compiling the study headers again (each program
// that included studies/registry.hpp compiled all seven studies, each study_<name> its
// own). The definitions and their order are those of studies/registry.hpp, unchanged.
#pragma once

#include <string>
#include <vector>

namespace kvq::study {

struct study_def;  // kvq/study/study.hpp

namespace compiled {

/// The study of studies/<name>.hpp, as registered in studies/registry.hpp.
const study_def& outliers();
const study_def& sinks();
const study_def& citations();
const study_def& policy();
const study_def& rotation();
const study_def& accumulation();
const study_def& compaction();

/// kvq::study::all_studies() of studies/registry.hpp (the order of `kvq study --help`).
const std::vector<study_def>& all_studies();
/// kvq::study::find_study of studies/registry.hpp: the study called `name`, or nullptr.
const study_def* find_study(const std::string& name);

/// kvq::study::run_standalone (kvq/study/cli.hpp), compiled here once, so that a
/// standalone study program is a main() that names its study.
int run_standalone(const study_def& def, int argc, char** argv);

}  // namespace compiled
}  // namespace kvq::study
