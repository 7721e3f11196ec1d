// studies/registry.cpp — the list of studies (studies/studies.hpp), built once.
#include "studies.hpp"

namespace kvq::study {

const std::vector<study_def>& all_studies() {
  static const std::vector<study_def> v = {outliers::definition(), sinks::definition(),    citations::definition(),
                                           policy::definition(),   rotation::definition(), accumulation::definition(),
                                           compaction::definition()};
  return v;
}

const study_def* find_study(const std::string& name) {
  for (const auto& d : all_studies())
    if (d.name == name) return &d;
  return nullptr;
}

}  // namespace kvq::study
