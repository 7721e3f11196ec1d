// The command-line verifier end to end: generate an example, verify it, corrupt one
// code and check that exactly that one is reported; bad usage and bad files exit 2.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include <kvq/block.hpp>
#include <kvq/format.hpp>
#include <kvq/verify/npy.hpp>
#include <kvq/verify/npy_verify.hpp>

#include "verify_cli.hpp"

// One namespace per file: these files are compiled as one unit (tests/verify/CMakeLists.txt).
namespace test_npy_verify_cpp {

using namespace kvq::verify;
using kvq::cli::npy_verify_main;
namespace fs = std::filesystem;

namespace {
struct run_result {
  int status;
  std::string out, err;
};

run_result run(std::vector<std::string> args) {
  args.insert(args.begin(), "kvq-npy-verify");
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::ostringstream out, err;
  const int st = npy_verify_main(static_cast<int>(args.size()), argv.data(), out, err);
  return {st, out.str(), err.str()};
}

fs::path temp_dir(const char* name) {
  const fs::path p = fs::temp_directory_path() / (std::string("kvq_test_npy_verify_") + name);
  fs::remove_all(p);
  return p;
}

// The first line of s that starts with `prefix` (empty if none).
std::string line_starting(const std::string& s, const std::string& prefix) {
  std::istringstream in(s);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(prefix, 0) == 0) return line;
  return "";
}

std::size_t count_lines(const std::string& s) {
  std::size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}
}  // namespace

TEST_CASE("npy verifier: example matches; one corrupted code is found and reported", "[verify][cli]") {
  const fs::path dir = temp_dir("e4m3");
  const std::string in = (dir / "input.npy").string(), codes = (dir / "codes.npy").string();
  auto made = run({"--make-example", dir.string(), "--scheme", "e4m3", "--rows", "4", "--cols", "32"});
  REQUIRE(made.status == 0);
  CHECK(made.out.find("verify with: kvq-npy-verify --scheme e4m3 --input") != std::string::npos);

  // the example's codes are what kvq::encode gives for the example's input
  const auto x = npy::read(in).to_float();
  auto c = npy::read(codes).as_u8();
  REQUIRE(x.size() == 128);
  REQUIRE(c.size() == 128);
  for (std::size_t i = 0; i < x.size(); ++i) CHECK(c[i] == kvq::encode<kvq::fmt::e4m3>(x[i]));

  auto ok = run({"--scheme", "e4m3", "--input", in, "--codes", codes});
  CHECK(ok.status == 0);
  CHECK(ok.out.find("0 of 128 elements differ") != std::string::npos);
  CHECK(ok.out.find("MATCH") != std::string::npos);

  // corrupt element 77 = row 2, column 13
  const std::size_t k = 77;
  const std::uint8_t orig = c[k];
  c[k] = static_cast<std::uint8_t>(orig ^ 0x01);
  npy::write(codes, npy::from_u8({4, 32}, c));
  auto bad = run({"--scheme", "e4m3", "--input", in, "--codes", codes});
  CHECK(bad.status == 1);
  CHECK(bad.out.find("1 of 128 elements differ") != std::string::npos);
  const std::string row = line_starting(bad.out, "  77 ");
  CHECK(row.find("(2, 13)") != std::string::npos);
  CHECK(row.find(kvq::verify::detail::hex_bits(orig, 8)) != std::string::npos);
  CHECK(bad.out.find("MISMATCH") != std::string::npos);
  // the library view of the same run
  npy_verify_request req;
  req.scheme = "e4m3";
  req.input = in;
  req.codes = codes;
  const auto res = npy_verify(req);
  CHECK(res.codes.mismatches == 1);
  REQUIRE(res.codes.first.size() == 1);
  CHECK(res.codes.first[0].index == k);
  CHECK(res.codes.first[0].expected_bits == orig);
  CHECK(res.codes.first[0].actual_bits == static_cast<std::uint8_t>(orig ^ 0x01));
  CHECK(res.codes.first[0].input == x[k]);
  CHECK(res.codes.first[0].expected_value == kvq::decode<kvq::fmt::e4m3, double>(orig));
  fs::remove_all(dir);
}

TEST_CASE("npy verifier: packed e2m1 codes, one corrupted nibble", "[verify][cli]") {
  const fs::path dir = temp_dir("e2m1");
  const std::string in = (dir / "input.npy").string(), codes = (dir / "codes.npy").string();
  REQUIRE(run({"--make-example", dir.string(), "--scheme", "e2m1"}).status == 0);
  auto c = npy::read(codes);
  CHECK(c.shape == std::vector<std::size_t>{8, 32});  // 8 x 64 values, two per byte
  CHECK(run({"--scheme", "e2m1", "--input", in, "--codes", codes}).status == 0);
  // element 301 = odd -> high nibble of byte 150
  auto bytes = c.as_u8();
  bytes[150] = static_cast<std::uint8_t>(bytes[150] ^ 0x80);
  npy::write(codes, npy::from_u8({8, 32}, bytes));
  auto bad = run({"--scheme", "e2m1", "--input", in, "--codes", codes});
  CHECK(bad.status == 1);
  CHECK(bad.out.find("1 of 512 elements differ") != std::string::npos);
  CHECK(line_starting(bad.out, "  301 ").find("(4, 45)") != std::string::npos);
  // a wrong rounding mode makes many differ
  REQUIRE(run({"--make-example", dir.string(), "--scheme", "e2m1"}).status == 0);
  auto rz = run({"--scheme", "e2m1", "--input", in, "--codes", codes, "--rounding", "rz", "--max-report", "2"});
  CHECK(rz.status == 1);
  CHECK(rz.out.find("more") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("npy verifier: bad usage and bad input exit 2 with one line", "[verify][cli]") {
  const fs::path dir = temp_dir("bad");
  const std::string in = (dir / "input.npy").string(), codes = (dir / "codes.npy").string();
  REQUIRE(run({"--make-example", dir.string(), "--scheme", "e5m2"}).status == 0);
  const std::vector<std::vector<std::string>> bad_runs = {
      {},
      {"--scheme", "e5m2", "--input", in},
      {"--scheme", "nvfp5", "--input", in, "--codes", codes},
      {"--scheme", "e5m2", "--input", in, "--codes", (dir / "missing.npy").string()},
      {"--scheme", "e5m2", "--input", codes, "--codes", codes},
      {"--scheme", "e5m2", "--input", in, "--codes", in},
      {"--scheme", "e5m2", "--input", in, "--codes", codes, "--rounding", "sideways"},
      {"--scheme", "e5m2", "--input", in, "--codes", codes, "--max-report", "-1"},
      {"--scheme", "e5m2", "--bogus"},
      {"--scheme"},
  };
  for (const auto& a : bad_runs) {
    const auto r = run(a);
    std::string cmd;
    for (const auto& s : a) cmd += s + " ";
    INFO(cmd << "-> " << r.err);
    CHECK(r.status == 2);
    CHECK(count_lines(r.err) == 1);
    CHECK(r.err.rfind("kvq-npy-verify: error: ", 0) == 0);
  }
  // codes with the wrong element count
  npy::write(codes, npy::from_u8({3}, {1, 2, 3}));
  const auto wrong = run({"--scheme", "e5m2", "--input", in, "--codes", codes});
  CHECK(wrong.status == 2);
  CHECK(wrong.err.find("holds 3 bytes; the input has 512 elements") != std::string::npos);
  // a corrupted header
  {
    std::FILE* f = std::fopen(codes.c_str(), "wb");
    REQUIRE(f);
    std::fputs("\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'}", f);
    std::fclose(f);
  }
  const auto hdr = run({"--scheme", "e5m2", "--input", in, "--codes", codes});
  CHECK(hdr.status == 2);
  CHECK(hdr.err.find("codes.npy") != std::string::npos);
  CHECK(run({"--help"}).status == 0);
  const auto list = run({"--list-schemes"});
  CHECK(list.status == 0);
  CHECK(list.out.find("e2m1") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("npy verifier: NVFP4 (TE) codes and scales, one corrupted scale, one corrupted code", "[verify][cli]") {
  const fs::path dir = temp_dir("nvfp4");
  const std::string in = (dir / "input.npy").string(), codes = (dir / "codes.npy").string(),
                    scales = (dir / "scales.npy").string();
  REQUIRE(run({"--make-example", dir.string(), "--scheme", "nvfp4_te", "--rows", "4", "--cols", "64"}).status == 0);
  const auto x = npy::read(in).to_float();
  auto c = npy::read(codes);
  auto sc = npy::read(scales);
  CHECK(c.shape == std::vector<std::size_t>{4, 32});   // 256 e2m1 codes, two per byte
  CHECK(sc.shape == std::vector<std::size_t>{4, 4});   // 16 blocks of 16
  const std::vector<std::string> args{"--scheme", "nvfp4_te", "--input", in, "--codes", codes, "--scales", scales};
  const auto ok = run(args);
  CHECK(ok.status == 0);
  CHECK(ok.out.find("computed from the input") != std::string::npos);
  // the TE tensor value is the amax: giving it explicitly changes nothing
  float amax = 0.0f;
  for (float v : x) amax = std::fabs(v) > amax ? std::fabs(v) : amax;
  std::ostringstream amax_text;
  amax_text.precision(9);
  amax_text << amax;
  auto with_tv = args;
  with_tv.insert(with_tv.end(), {"--tensor-value", amax_text.str()});
  CHECK(run(with_tv).status == 0);
  // corrupt the scale of block 5 = row 1, block column 1
  auto sbytes = sc.as_u8();
  const std::uint8_t orig = sbytes[5];
  sbytes[5] = static_cast<std::uint8_t>(orig + 1);
  npy::write(scales, npy::from_u8({4, 4}, sbytes));
  auto bad = run(args);
  CHECK(bad.status == 1);
  CHECK(bad.out.find("codes (e2m1), packed: 0 of 256 elements differ") != std::string::npos);
  CHECK(bad.out.find("scales (e4m3): 1 of 16 elements differ") != std::string::npos);
  CHECK(line_starting(bad.out, "  5 ").find("(1, 1)") != std::string::npos);
  sbytes[5] = orig;
  npy::write(scales, npy::from_u8({4, 4}, sbytes));
  // corrupt element 100 (low nibble of byte 50)
  auto cbytes = c.as_u8();
  cbytes[50] = static_cast<std::uint8_t>(cbytes[50] ^ 0x01);
  npy::write(codes, npy::from_u8({4, 32}, cbytes));
  bad = run(args);
  CHECK(bad.status == 1);
  CHECK(bad.out.find("codes (e2m1), packed: 1 of 256 elements differ") != std::string::npos);
  CHECK(line_starting(bad.out, "  100 ").find("(1, 36)") != std::string::npos);
  CHECK(bad.out.find("scales (e4m3): 0 of 16 elements differ") != std::string::npos);
  // a wrong tensor value changes the scales
  auto wrong_tv = args;
  wrong_tv.insert(wrong_tv.end(), {"--tensor-value", "1"});
  CHECK(run(wrong_tv).status == 1);
  // bad combinations exit 2
  CHECK(run({"--scheme", "nvfp4_te", "--input", in, "--codes", codes}).status == 2);  // no --scales
  auto with_rounding = args;
  with_rounding.insert(with_rounding.end(), {"--rounding", "rz"});
  CHECK(run(with_rounding).status == 2);
  CHECK(run({"--scheme", "e2m1", "--input", in, "--codes", codes, "--scales", scales}).status == 2);
  CHECK(run({"--scheme", "e2m1", "--input", in, "--codes", codes, "--tensor-value", "1"}).status == 2);
  npy::write(scales, npy::from_u8({3}, {1, 2, 3}));
  const auto few = run(args);
  CHECK(few.status == 2);
  CHECK(few.err.find("holds 3 scales; 16 blocks expected") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("npy verifier: bfloat16 input through the recipe's bf16 path (MXFP8)", "[verify][cli]") {
  namespace b = kvq::block;
  const fs::path dir = temp_dir("bf16");
  fs::create_directories(dir);
  const std::string in = (dir / "input.npy").string(), codes = (dir / "codes.npy").string(),
                    scales = (dir / "scales.npy").string();
  // 2 x 64 bf16 values
  std::vector<std::uint16_t> h(128);
  for (std::size_t i = 0; i < h.size(); ++i)
    h[i] = static_cast<std::uint16_t>(0x3C00u + (i * 37u) % 0x0900u + ((i % 3) ? 0u : 0x8000u));
  npy::write(in, npy::from_u16({2, 64}, h));
  const b::mxfp8_e4m3_rceil s{};
  std::vector<std::uint8_t> c(128), sc(4);
  b::quantize<b::mxfp8_e4m3_rceil, b::bf16_input>(s, h.data(), h.size(), b::tensor_value::computed(), c.data(),
                                                   c.size(), sc.data(), sc.size());
  npy::write(codes, npy::from_u8({2, 64}, c));
  npy::write(scales, npy::from_u8({2, 2}, sc));
  const std::vector<std::string> args{"--scheme", "mxfp8_e4m3_rceil", "--input", in, "--codes", codes, "--scales", scales};
  CHECK(run(args).status == 0);
  c[127] = static_cast<std::uint8_t>(c[127] ^ 0x10);
  npy::write(codes, npy::from_u8({2, 64}, c));
  const auto bad = run(args);
  CHECK(bad.status == 1);
  CHECK(bad.out.find("codes (e4m3): 1 of 128 elements differ") != std::string::npos);
  CHECK(line_starting(bad.out, "  127 ").find("(1, 63)") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("npy verifier: float32 scales of fp8_per_token_head, one ulp off", "[verify][cli]") {
  const fs::path dir = temp_dir("tokhead");
  const std::string in = (dir / "input.npy").string(), codes = (dir / "codes.npy").string(),
                    scales = (dir / "scales.npy").string();
  REQUIRE(run({"--make-example", dir.string(), "--scheme", "fp8_per_token_head", "--rows", "6", "--cols", "32"}).status ==
          0);
  const std::vector<std::string> args{"--scheme", "fp8_per_token_head", "--input", in, "--codes", codes, "--scales", scales};
  CHECK(run(args).status == 0);
  auto f = npy::read(scales).to_float();
  REQUIRE(f.size() == 6);  // one scale per row (token, head)
  f[4] = std::nextafter(f[4], 1e30f);
  npy::write(scales, npy::from_floats({6, 1}, f));
  const auto bad = run(args);
  CHECK(bad.status == 1);
  CHECK(bad.out.find("scales (float32): 1 of 6 elements differ") != std::string::npos);
  fs::remove_all(dir);
}

}  // namespace test_npy_verify_cpp
