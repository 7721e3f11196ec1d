// Every study of examples/studies/, compiled once: the list is studies/registry.hpp's own
// all_studies(), so a study registered there is in the kvq command with nothing to add here.
// One unit for all seven: each unit that includes the study headers pays 15 to 20 CPU-s for
// the library and study-engine headers alone, so one unit costs far less than seven.
#include "compiled_studies.hpp"

#include "studies/registry.hpp"

namespace kvq::study::compiled {

// The standalone programs' studies: each header's own definition().
const study_def& outliers() {
  static const study_def def = kvq::study::outliers::definition();
  return def;
}
const study_def& sinks() {
  static const study_def def = kvq::study::sinks::definition();
  return def;
}
const study_def& citations() {
  static const study_def def = kvq::study::citations::definition();
  return def;
}
const study_def& policy() {
  static const study_def def = kvq::study::policy::definition();
  return def;
}
const study_def& rotation() {
  static const study_def def = kvq::study::rotation::definition();
  return def;
}
const study_def& accumulation() {
  static const study_def def = kvq::study::accumulation::definition();
  return def;
}
const study_def& compaction() {
  static const study_def def = kvq::study::compaction::definition();
  return def;
}

const std::vector<study_def>& all_studies() { return kvq::study::all_studies(); }

const study_def* find_study(const std::string& name) { return kvq::study::find_study(name); }

}  // namespace kvq::study::compiled
