// Consumer of the installed kvq package: encodes and decodes a few values whose codes
// follow from the OCP FP8 / FP4 definitions, and checks that kvq's determinism flags
// reached this translation unit.
#include <kvq/kvq.hpp>

#include <cstdio>
#include <cstring>

#include "contraction_probe.hpp"

namespace {
int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::printf("FAILED: %s\n", what);
    ++failures;
  }
}
}  // namespace

int main() {
  // e4m3: 1.0 = 0.0111.000 (bias 7); 448 = 0.1111.110 is the largest finite value and
  // 1000 saturates to it; -2 = 1.1000.000.
  check(kvq::encode<kvq::fmt::e4m3>(1.0f) == 0x38, "e4m3 encode 1.0");
  check(kvq::encode<kvq::fmt::e4m3>(1000.0f) == 0x7E, "e4m3 encode 1000 saturates to 448");
  check(kvq::encode<kvq::fmt::e4m3>(-2.0) == 0xC0, "e4m3 encode -2.0 (double)");
  check(kvq::decode<kvq::fmt::e4m3>(0x7E) == 448.0f, "e4m3 decode 0x7E");
  // e5m2: 1.0 = 0.01111.00 (bias 15); 57344 = 0.11110.11.
  check(kvq::encode<kvq::fmt::e5m2>(1.0f) == 0x3C, "e5m2 encode 1.0");
  check(kvq::decode<kvq::fmt::e5m2>(0x7B) == 57344.0f, "e5m2 decode 0x7B");
  // e2m1: 6 = 0.11.1 is the largest value; 0.5 = 0.00.1 the only subnormal.
  check(kvq::encode<kvq::fmt::e2m1>(6.0f) == 0x7, "e2m1 encode 6.0");
  check(kvq::decode<kvq::fmt::e2m1>(0x1) == 0.5f, "e2m1 decode 0x1");
  // Value type round trip.
  check(static_cast<float>(kvq::e4m3(0.5f)) == 0.5f, "kvq::e4m3 value type round trip");

  check(std::strcmp(KVQ_VERSION_STRING, KVQ_PACKAGE_VERSION) == 0,
        "header version matches the package version");

  // kvq::kvq exports -ffp-contract=off: a*b+c must be rounded twice here even when the
  // CPU could fuse it (contraction_control shows the same code fuses without the flag).
  if (cpu_has_fma()) {
    const float r = contraction_residue();
    std::printf("contraction residue %a (0x0p+0 expected)\n", static_cast<double>(r));
    check(r == 0.0f, "no floating-point contraction in code using kvq::kvq");
  } else {
    std::puts("CPU without FMA: contraction probe not applicable");
  }

  if (failures == 0) std::puts("package consumer: all checks passed");
  return failures == 0 ? 0 : 1;
}
