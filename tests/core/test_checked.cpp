// kvq::detail::checked_mul / checked_add against 128-bit integer arithmetic, and the
// regular-file check of every input path (a directory, a FIFO, a character device).
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>

#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <kvq/core/error.hpp>
#include <kvq/core/input_file.hpp>

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

TEST_CASE("only regular files pass the input-file check", "[core][input_file]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kvq_test_checked_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string file = (dir / "a.txt").string(), fifo = (dir / "fifo").string();
  std::ofstream(file) << "x\n";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  fs::create_symlink(file, dir / "link");

  CHECK(kvq::detail::not_regular_file(file).empty());
  CHECK(kvq::detail::not_regular_file((dir / "link").string()).empty());  // symlinks are followed
  CHECK(kvq::detail::not_regular_file((dir / "missing").string()).empty());  // left to the reader's open
  CHECK(kvq::detail::not_regular_file(dir.string()) == "is a directory, not a regular file");
  CHECK(kvq::detail::not_regular_file(fifo) == "is a FIFO (named pipe), not a regular file");  // and did not block
  if (fs::exists("/dev/zero"))
    CHECK(kvq::detail::not_regular_file("/dev/zero") == "is a character device, not a regular file");
  CHECK_THROWS_WITH(kvq::detail::require_regular_file("--input", fifo),
                    "--input '" + fifo + "' is a FIFO (named pipe), not a regular file");
  CHECK_NOTHROW(kvq::detail::require_regular_file("--input", file));
  fs::remove_all(dir);
}
