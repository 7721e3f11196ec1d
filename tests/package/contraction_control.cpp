// Built with -ffp-contract=fast and without kvq: must observe contraction, which shows
// that the probe used by app.cpp can detect it on this compiler and CPU.
#include <cstdio>

#include "contraction_probe.hpp"

int main() {
  if (!cpu_has_fma()) {
    std::puts("CPU without FMA: contraction cannot be observed; skipped");
    return 77;
  }
  const float r = contraction_residue();
  std::printf("control residue %a (contracted: 0x1p-24)\n", static_cast<double>(r));
  return r == 0x1p-24f ? 0 : 1;
}
