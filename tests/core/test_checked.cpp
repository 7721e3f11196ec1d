// kvq::detail::checked_mul / checked_add against 128-bit integer arithmetic.
#include <catch2/catch.hpp>

#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>

#include <kvq/core/error.hpp>

using kvq::detail::checked_add;
using kvq::detail::checked_mul;

TEST_CASE("checked_mul and checked_add agree with 128-bit arithmetic", "[core][checked]") {
  __extension__ typedef unsigned __int128 u128;  // GCC/Clang 128-bit integers: the oracle
  const u128 max = std::numeric_limits<std::size_t>::max();
  std::mt19937_64 g(11);
  for (int i = 0; i < 20000; ++i) {
    // Operands of every magnitude: a random bit length, then random bits.
    const auto pick = [&] {
      const unsigned bits = static_cast<unsigned>(g() % 65);
      return bits == 0 ? std::size_t{0} : static_cast<std::size_t>(g() >> (64 - bits));
    };
    const std::size_t a = pick(), b = pick();
    const u128 p = static_cast<u128>(a) * b, s = static_cast<u128>(a) + b;
    if (p <= max)
      CHECK(checked_mul(a, b, "x") == static_cast<std::size_t>(p));
    else
      CHECK_THROWS_AS(checked_mul(a, b, "x"), std::invalid_argument);
    if (s <= max)
      CHECK(checked_add(a, b, "x") == static_cast<std::size_t>(s));
    else
      CHECK_THROWS_AS(checked_add(a, b, "x"), std::invalid_argument);
  }
  // The edges, and the message names the quantity and both factors.
  CHECK(checked_mul(std::size_t{1} << 32, (std::size_t{1} << 32) - 1, "x") == (std::size_t{1} << 32) * ((std::size_t{1} << 32) - 1));
  CHECK(checked_mul(0, std::numeric_limits<std::size_t>::max(), "x") == 0);
  CHECK_THROWS_WITH(checked_mul((std::size_t{1} << 60) + 4, 16, "kvq::block::quantize_rows: rows x cols"),
                    "kvq::block::quantize_rows: rows x cols = 1152921504606846980 x 16 overflows std::size_t "
                    "(18446744073709551615)");
  CHECK_THROWS_WITH(checked_add(std::numeric_limits<std::size_t>::max(), 1, "bytes"), Catch::StartsWith("bytes = "));
}
