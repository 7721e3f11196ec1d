// kvq::encode_n / decode_n (bulk.hpp) must be bit-identical to the scalar functions
// for every format, rounding mode, overflow policy and input type. The float
// nearest_even loop has its own fast path; it is checked on all 2^32 inputs by
// test_encode_exhaustive, here on a quick sample (also under sanitizers).
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <kvq/format.hpp>

#include "formats_under_test.hpp"
#include "sweep.hpp"

using namespace kvqtest;

namespace {

std::vector<float> float_sample() {
  std::vector<float> v;
  for (std::uint64_t u = 0; u < (1ull << 32); u += 9973) v.push_back(float_from_bits(static_cast<std::uint32_t>(u)));
  // Ties and their neighbours in the range of every format: patterns with the low 13
  // bits 0x1FFF, 0, 1 and exponents from 2^-20 to 2^20.
  for (std::uint32_t e = 127 - 20; e <= 127 + 20; ++e)
    for (std::uint32_t hi = 0; hi < 1024; ++hi)
      for (std::uint32_t low : {0u, 1u, 0x1FFFu}) {
        const std::uint32_t u = (e << 23) | (hi << 13) | low;
        v.push_back(float_from_bits(u));
        v.push_back(float_from_bits(u | 0x80000000u));
      }
  return v;
}

std::vector<double> double_sample() {
  std::mt19937_64 rng(99);
  std::vector<double> v;
  for (int i = 0; i < 40000; ++i) {
    const std::uint64_t r = rng();
    // Exponents near the formats' ranges half the time, any bit pattern otherwise.
    const std::uint64_t e = 1023 - 140 + (r >> 32) % 280;
    v.push_back(double_from_bits(i % 2 ? r : ((r & 0x800FFFFFFFFFFFFFull) | (e << 52))));
  }
  return v;
}

template <class F, class X>
void check_bulk(const std::vector<X>& xs) {
  std::vector<std::uint8_t> out(xs.size());
  for (rmode r : all_rmodes) {
    for (ovf o : all_ovfs) {
      kvq::encode_n<F>(xs.data(), xs.size(), out.data(), to_kvq(r), to_kvq(o));
      mismatch_log log;
      for (std::size_t i = 0; i < xs.size(); ++i) {
        const unsigned want = kvq::encode<F>(xs[i], to_kvq(r), to_kvq(o));
        ++log.checked;
        if (out[i] != want) log.add(bits_of(xs[i]), want, out[i], -1, "encode_n vs encode");
      }
      INFO(kvq::format_name<F>() << " " << name_of(r) << " " << name_of(o) << " " << (sizeof(X) == 4 ? "float" : "double")
                                 << ": " << log.report(2 * static_cast<int>(sizeof(X))));
      CHECK(log.count == 0);
    }
  }
}

}  // namespace

TEST_CASE("encode_n equals encode for every format, mode and input type", "[bulk]") {
  const std::vector<float> fs = float_sample();
  const std::vector<double> ds = double_sample();
  for_each_format([&](auto f) {
    using F = decltype(f);
    check_bulk<F>(fs);
    check_bulk<F>(ds);
  });
}

TEST_CASE("decode_n equals decode, and odd lengths work", "[bulk]") {
  for_each_format([](auto f) {
    using F = decltype(f);
    for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{7}, std::size_t{256}, std::size_t{1000}}) {
      std::vector<std::uint8_t> codes(n);
      for (std::size_t i = 0; i < n; ++i) codes[i] = static_cast<std::uint8_t>(i * 37 + 11);
      std::vector<float> out(n);
      kvq::decode_n<F>(codes.data(), n, out.data());
      for (std::size_t i = 0; i < n; ++i) {
        INFO(kvq::format_name<F>() << " code " << hex(codes[i], 2));
        CHECK(bits_of(out[i]) == bits_of(kvq::decode<F>(codes[i])));
      }
      std::vector<float> xs(n);
      for (std::size_t i = 0; i < n; ++i) xs[i] = static_cast<float>(i) * 0.37f - 50.0f;
      std::vector<std::uint8_t> enc(n + 1, 0xA5);
      kvq::encode_n<F>(xs.data(), n, enc.data());
      for (std::size_t i = 0; i < n; ++i) CHECK(enc[i] == kvq::encode<F>(xs[i]));
      CHECK(enc[n] == 0xA5);  // nothing written past the end
    }
  });
}
