// encode_n_parallel / decode_n_parallel (format/parallel.hpp): the same output as the
// single-thread encode_n / decode_n, byte for byte, for 1, 2, 3 and 7 threads and array
// lengths around the 64-element chunk grain; argument errors throw.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <vector>

#include <kvq/format.hpp>

namespace {

std::vector<float> random_floats(std::size_t n) {
  std::mt19937 rng(7u);
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t r = static_cast<std::uint32_t>(rng());
    const std::uint32_t u = i % 3 ? (r & 0x807FFFFFu) | ((120u + r % 16u) << 23) : r;  // any pattern 1/3 of the time
    std::memcpy(&v[i], &u, 4);
  }
  return v;
}

template <class F>
void check_format(const std::vector<float>& xs, std::size_t n, kvq::rounding r, kvq::overflow o) {
  std::vector<std::uint8_t> want(n + 1, 0x5A), got(n + 1, 0x5A);
  kvq::encode_n<F>(xs.data(), n, want.data(), r, o);
  std::vector<float> dwant(n + 1, -1.0f), dgot(n + 1, -1.0f);
  kvq::decode_n<F>(want.data(), n, dwant.data());
  for (unsigned t : {1u, 2u, 3u, 7u}) {
    INFO(kvq::format_name<F>() << " n=" << n << " threads=" << t << " " << kvq::to_string(r));
    std::fill(got.begin(), got.end(), std::uint8_t{0x5A});
    kvq::encode_n_parallel<F>(xs.data(), n, got.data(), t, r, o);
    CHECK(got == want);  // includes the guard byte past the end
    std::fill(dgot.begin(), dgot.end(), -1.0f);
    kvq::decode_n_parallel<F>(want.data(), n, dgot.data(), t);
    CHECK(std::memcmp(dgot.data(), dwant.data(), (n + 1) * sizeof(float)) == 0);
  }
}

}  // namespace

TEST_CASE("parallel encode/decode equal the single-thread loops for any thread count", "[format][bulk][parallel]") {
  const std::vector<float> xs = random_floats(100003);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{63}, std::size_t{64}, std::size_t{65},
                        std::size_t{200}, std::size_t{449}, std::size_t{100003}}) {
    check_format<kvq::fmt::e4m3>(xs, n, kvq::rounding::nearest_even, kvq::overflow::satfinite);
    check_format<kvq::fmt::e2m1>(xs, n, kvq::rounding::nearest_even, kvq::overflow::satfinite);
    check_format<kvq::fmt::e5m2>(xs, n, kvq::rounding::nearest_even, kvq::overflow::nosat);
    check_format<kvq::fmt::e5m2fnuz>(xs, n, kvq::rounding::toward_zero, kvq::overflow::nosat);
  }
}

TEST_CASE("parallel encode/decode reject bad arguments", "[format][bulk][parallel]") {
  std::vector<float> x(8, 1.0f);
  std::vector<std::uint8_t> c(8);
  CHECK_THROWS_AS(kvq::encode_n_parallel<kvq::fmt::e4m3>(x.data(), 8, c.data(), 0u), std::invalid_argument);
  CHECK_THROWS_AS(kvq::encode_n_parallel<kvq::fmt::e4m3>(static_cast<const float*>(nullptr), 8, c.data(), 2u),
                  std::invalid_argument);
  CHECK_THROWS_AS(kvq::encode_n_parallel<kvq::fmt::e4m3>(x.data(), 8, nullptr, 2u), std::invalid_argument);
  CHECK_THROWS_AS(kvq::decode_n_parallel<kvq::fmt::e4m3>(nullptr, 8, x.data(), 2u), std::invalid_argument);
  CHECK_THROWS_AS(kvq::decode_n_parallel<kvq::fmt::e4m3>(c.data(), 8, static_cast<float*>(nullptr), 2u),
                  std::invalid_argument);
  CHECK_THROWS_WITH(kvq::encode_n_parallel<kvq::fmt::e4m3>(x.data(), 8, c.data(), 0u),
                    Catch::Contains("kvq::encode_n_parallel") && Catch::Contains("threads"));
  // n == 0 with null pointers is a no-op
  CHECK_NOTHROW(kvq::encode_n_parallel<kvq::fmt::e4m3>(static_cast<const float*>(nullptr), 0, nullptr, 3u));
}
