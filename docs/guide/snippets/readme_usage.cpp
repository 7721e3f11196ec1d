#include <kvq/kvq.hpp>
#include <cstdio>

int main() {
  std::uint8_t c = kvq::encode<kvq::fmt::e4m3>(0.3f);      // RNE + satfinite, like cvt.rn.satfinite
  float back = kvq::decode<kvq::fmt::e4m3>(c);              // exact value of the code: 0.3125
  std::uint8_t sat = kvq::encode<kvq::fmt::e4m3>(1000.0f);  // saturates to 448 (0x7e)
  std::uint8_t inf = kvq::encode<kvq::fmt::e5m2>(1e6f, kvq::rounding::nearest_even,
                                                 kvq::overflow::nosat);  // +Inf (0x7c)
  kvq::e2m1 q(2.7f);                                        // one-byte value type: 3
  std::printf("%#04x %g %#04x %#04x %g\n", c, back, sat, inf, static_cast<float>(q));
}
