// studies/registry.hpp — every study the kvq command knows, in the order of `kvq study --help`.
#pragma once

#include <kvq/study.hpp>
#include "outliers.hpp"
#include "sinks.hpp"
#include "citations.hpp"
#include "policy.hpp"
#include "rotation.hpp"
#include "accumulation.hpp"
#include "compaction.hpp"

#include <string>
#include <vector>

namespace kvq::study {

inline const std::vector<study_def>& all_studies() {
  static const std::vector<study_def> v = {outliers::definition(), sinks::definition(), citations::definition(), policy::definition(),
                                             rotation::definition(), accumulation::definition(),
                                             compaction::definition()};
  return v;
}

inline const study_def* find_study(const std::string& name) {
  for (const auto& d : all_studies())
    if (d.name == name) return &d;
  return nullptr;
}

}  // namespace kvq::study
