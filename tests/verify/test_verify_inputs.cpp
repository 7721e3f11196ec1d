// The verifier's own input checks: float and seed option values (subnormal floats are
// numbers, overflow is not; seeds are digits only), swizzled-layout sizes that overflow,
// and input paths that are not regular files (a directory, a FIFO, /dev/zero), refused
// before any open (a FIFO would block it).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

#include <kvq/verify/npy_verify.hpp>
#include <kvq/verify/scale_layout.hpp>

// One namespace per file: these files are compiled as one unit (tests/verify/CMakeLists.txt).
namespace test_verify_inputs_cpp {

namespace v = kvq::verify;

TEST_CASE("--tensor-value: subnormal floats are numbers, overflow and underflow to 0 are not", "[verify][cli]") {
  // Oracles: the float grid itself. 2^-149 is the smallest subnormal; 1e-38 lies between
  // subnormals k * 2^-149, and the nearest one is within half a step (2^-150), computed
  // in double, where both numbers are exact enough to decide.
  CHECK(v::detail::parse_float("--tensor-value", "0x1p-149") == std::numeric_limits<float>::denorm_min());
  const float x = v::detail::parse_float("--tensor-value", "1e-38");
  CHECK(std::fpclassify(x) == FP_SUBNORMAL);
  CHECK(std::fabs(static_cast<double>(x) - 1e-38) <= std::ldexp(1.0, -150));
  CHECK(v::detail::parse_float("--tensor-value", "1.5") == 1.5f);
  CHECK(v::detail::parse_float("--tensor-value", "3.4028234e38") == std::numeric_limits<float>::max());
  CHECK_THROWS_WITH(v::detail::parse_float("--tensor-value", "1e39"), Catch::Contains("overflows float"));
  CHECK_THROWS_WITH(v::detail::parse_float("--tensor-value", "1e-50"), Catch::Contains("below the smallest float subnormal"));
  CHECK_THROWS_WITH(v::detail::parse_float("--tensor-value", "abc"), "--tensor-value must be a number, got 'abc'");
  CHECK_THROWS_AS(v::detail::parse_float("--tensor-value", " 1"), std::invalid_argument);
  CHECK_THROWS_AS(v::detail::parse_float("--tensor-value", "1x"), std::invalid_argument);
  CHECK_THROWS_AS(v::detail::parse_float("--tensor-value", ""), std::invalid_argument);
}

TEST_CASE("--seed: digits only, up to 2^64 - 1", "[verify][cli]") {
  CHECK(v::detail::parse_seed("--seed", "0") == 0u);
  CHECK(v::detail::parse_seed("--seed", "18446744073709551615") == UINT64_MAX);
  for (const char* bad : {"18446744073709551616", "-1", " -1", " 1", "+1", "1 ", "", "0x10", "99999999999999999999"})
    CHECK_THROWS_WITH(v::detail::parse_seed("--seed", bad), Catch::Contains("must be an integer in [0, 18446744073709551615]"));
  // The counts too: strtoull would read " -1" as 2^64 - 1.
  CHECK_THROWS_AS(v::detail::parse_count("--rows", " -1", 1, std::numeric_limits<std::size_t>::max()),
                  std::invalid_argument);
  CHECK_THROWS_AS(v::detail::parse_count("--rows", " 5", 1, 100), std::invalid_argument);
  CHECK(v::detail::parse_count("--rows", "5", 1, 100) == 5u);
}

TEST_CASE("swizzled 128x4 layout: sizes that overflow are errors", "[verify][scale_layout][overflow]") {
  const std::size_t max = std::numeric_limits<std::size_t>::max();
  CHECK(v::swizzled_size(130, 3) == 2u * 128u * 4u);
  CHECK_THROWS_WITH(v::swizzled_size(max, max), Catch::Contains("overflows std::size_t"));
  const std::vector<std::uint8_t> few(8);
  // 2^33 x 2^33 wraps to 0 in std::size_t: without the check an empty vector would "match".
  CHECK_THROWS_WITH(v::swizzle_scales(std::vector<std::uint8_t>{}, std::size_t{1} << 33, std::size_t{1} << 33),
                    Catch::Contains("rows x cols"));
  CHECK_THROWS_WITH(v::unswizzle_scales(few, std::size_t{1} << 33, std::size_t{1} << 33), Catch::Contains("rows x cols"));
  CHECK_THROWS_WITH(v::npy_make_example("unused", "nvfp4_te", std::size_t{1} << 32, std::size_t{1} << 32),
                    Catch::Contains("--rows x --cols"));
}

TEST_CASE("npy_verify refuses inputs that are not regular files, before opening them", "[verify][npy][files]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("kvq_test_verify_inputs_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string cmd = v::npy_make_example((dir / "ex").string(), "e4m3", 2, 16);
  const std::string input = (dir / "ex" / "input.npy").string(), codes = (dir / "ex" / "codes.npy").string();
  REQUIRE(fs::is_regular_file(input));
  REQUIRE(fs::is_regular_file(codes));
  const std::string fifo = (dir / "fifo.npy").string();
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);

  v::npy_verify_request req;
  req.scheme = "e4m3";
  req.input = input;
  req.codes = codes;
  CHECK(v::npy_verify(req).ok());
  struct bad_case {
    std::string path, what;
  };
  std::vector<bad_case> cases = {{dir.string(), "is a directory"}, {fifo, "is a FIFO (named pipe)"}};
  if (fs::exists("/dev/zero")) cases.push_back({"/dev/zero", "is a character device"});
  for (const auto& c : cases) {
    INFO(c.path);
    req.input = c.path;
    req.codes = codes;
    CHECK_THROWS_WITH(v::npy_verify(req), "--input '" + c.path + "' " + c.what + ", not a regular file");
    req.input = input;
    req.codes = c.path;
    CHECK_THROWS_WITH(v::npy_verify(req), "--codes '" + c.path + "' " + c.what + ", not a regular file");
  }
  fs::remove_all(dir);
}

}  // namespace test_verify_inputs_cpp
