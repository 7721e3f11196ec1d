// studies/studies.hpp — the studies the kvq command, kvq-mpi and kvq.run_study run, each
// compiled once (studies/<name>.cpp) into the kvq_studies library that all three link.
// A study is a kvq::study::study_def (kvq/study/study.hpp): its grid parameters, output
// tables and run function; the shared toolkit is kvq/study/{schemes,stats,lab,kv_source,
// citation_scenario}.hpp. A new study adds its .cpp, a line here and one in registry.cpp.
#pragma once

#include <kvq/study/study.hpp>

#include <string>
#include <vector>

namespace kvq::study {

namespace outliers {
study_def definition();  ///< key channel outliers x scheme x context (studies/outliers.cpp)
}
namespace sinks {
study_def definition();  ///< attention sinks and massive activations (studies/sinks.cpp)
}
namespace citations {
study_def definition();  ///< the false-citation falsification test (studies/citations.cpp)
}
namespace policy {
study_def definition();  ///< mixed-precision KV policies (studies/policy.cpp)
}
namespace rotation {
study_def definition();  ///< Hadamard rotation vs none (studies/rotation.cpp)
}
namespace accumulation {
study_def definition();  ///< FA3 FP8 accumulation (studies/accumulation.cpp)
}
namespace compaction {
study_def definition();  ///< fewer bits or fewer tokens (studies/compaction.cpp)
}

/// Every study, in the order of `kvq study --help`.
const std::vector<study_def>& all_studies();
/// The study called `name`, or nullptr.
const study_def* find_study(const std::string& name);

}  // namespace kvq::study
