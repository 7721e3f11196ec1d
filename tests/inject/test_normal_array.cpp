// normal_doubles must give counter_rng::normal_double's bits for every counter (the scalar
// draw's distribution and its Philox stream are checked in test_random against the Random123
// known-answer vectors and moments). Counters cover every quadrant of the cosine, u1 = 1
// (log exactly 0), both sides of sqrt(2) in the log's reduction, the largest counters of a
// 64-bit index (high counter word), and every alignment of the lane groups.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include <kvq/inject/normal_array.hpp>

#include "../core/isa_copies.hpp"

namespace {
std::uint64_t bits64(double x) {
  std::uint64_t u;
  std::memcpy(&u, &x, 8);
  return u;
}
}  // namespace

TEST_CASE("normal_doubles gives normal_double's bits for every counter", "[inject][quick]") {
  std::mt19937_64 gen(5);
  for (int trial = 0; trial < 40; ++trial) {
    const kvq::inject::counter_rng rng{gen(), trial % 3 == 0 ? 0 : gen()};
    std::uint64_t first = trial % 4 == 0 ? 0 : gen();
    if (trial % 5 == 1) first = ~std::uint64_t{0} - 3000;  // wraps past 2^64 - 1
    const std::size_t count = 5000 + static_cast<std::size_t>(trial);
    // under each copy of the kernel this CPU runs (kvq/core/isa.hpp)
    kvq_test::for_each_isa([&](kvq::isa copy) {
      std::vector<double> z(count + 1, 12345.0);
      kvq::inject::normal_doubles(rng, first, count, z.data());
      for (std::size_t i = 0; i < count; ++i) {
        INFO("seed " << rng.seed << " stream " << rng.stream << " counter " << first + i << ", "
                     << kvq::isa_name(copy));
        REQUIRE(bits64(z[i]) == bits64(rng.normal_double(first + i)));
      }
      REQUIRE(z[count] == 12345.0);  // nothing written past count
    });
  }
  // The integer conversion the kernel rewrites, over its whole domain's edges (u1's
  // numerator (b1 >> 11) + 1 reaches 2^53) and at random.
  for (std::uint64_t v : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{2}, std::uint64_t{3},
                          (std::uint64_t{1} << 52) - 1, std::uint64_t{1} << 52, (std::uint64_t{1} << 52) + 1,
                          (std::uint64_t{1} << 53) - 1, std::uint64_t{1} << 53}) {
    INFO("v = " << v);
    REQUIRE(kvq::inject::detail::u53_to_double(v) == static_cast<double>(v));
  }
  for (int i = 0; i < 100000; ++i) {
    const std::uint64_t v = (gen() >> 11) + 1;
    REQUIRE(kvq::inject::detail::u53_to_double(v) == static_cast<double>(v));
  }
}
