// Runs a test body under each copy of the bulk kernels this CPU runs (kvq/core/isa.hpp),
// then restores the copy chosen before.
#pragma once

#include <kvq/core/isa.hpp>

namespace kvq_test {

template <class Body>
void for_each_isa(Body&& body) {
  const kvq::isa before = kvq::active_isa();
  for (kvq::isa i : {kvq::isa::baseline, kvq::isa::x86_64_v3}) {
    if (!kvq::cpu_supports(i)) continue;
    kvq::set_isa(i);
    body(i);
  }
  kvq::set_isa(before);
}

}  // namespace kvq_test
