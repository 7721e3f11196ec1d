// Verify a conversion kernel from C++: the same inputs through your kernel and kvq's.
#include <cstdint>
#include <iostream>

#include <kvq/verify.hpp>

int main() {
  namespace kv = kvq::verify;
  // Your kernel, batch form: launch it on `in`, copy the codes back into `out`. Here a
  // stand-in that truncates (rounds toward zero) where the hardware rounds to nearest even.
  auto my_kernel = [](const float* in, std::size_t n, std::uint8_t* out) {
    for (std::size_t i = 0; i < n; ++i)
      out[i] = kvq::encode<kvq::fmt::e4m3>(in[i], kvq::rounding::toward_zero);
  };
  kv::list_floats inputs({0.3f, 17.0f, 19.0f, 1000.0f});  // or kv::exhaustive_floats, random_floats
  const kv::report r = kv::run_pipeline<kvq::fmt::e4m3>(inputs, my_kernel);  // vs cvt.rn.satfinite
  kv::print(std::cout, r);
  return r.ok() ? 0 : 1;
}
