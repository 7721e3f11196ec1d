// The smallest program using kvq: one value through FP8 e4m3 and back.
#include <cstdio>

#include <kvq/format.hpp>

int main() {
  const std::uint8_t c = kvq::encode<kvq::fmt::e4m3>(0.3f);  // round to nearest even, satfinite
  std::printf("0.3 -> e4m3 %#04x = %g\n", c, kvq::decode<kvq::fmt::e4m3>(c));  // 0x2a = 0.3125
}
