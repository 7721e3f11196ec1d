// The one verification entry point (kvq/verify/check.hpp): check() on buffers in memory,
// the .npy path (npy_verify) and the command line (kvq verify, --dump) give the same
// report for the same kernel output; check()'s refusals name the problem.
#include <catch2/catch.hpp>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <kvq/block.hpp>
#include <kvq/verify/check.hpp>
#include <kvq/verify/npy.hpp>
#include <kvq/verify/npy_verify.hpp>

#include "verify_cli.hpp"

// One namespace per file: these files are compiled as one unit (tests/verify/CMakeLists.txt).
namespace test_check_cpp {

using namespace kvq::verify;
namespace b = kvq::block;
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
  const int st = kvq::cli::npy_verify_main(static_cast<int>(args.size()), argv.data(), out, err);
  return {st, out.str(), err.str()};
}

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// Counter-based values in (-lim, lim).
std::vector<float> noise(std::size_t n, float lim, std::uint32_t seed) {
  std::vector<float> v(n);
  std::uint32_t s = seed;
  for (auto& f : v) {
    s = s * 1664525u + 1013904223u;
    f = lim * (static_cast<float>(s >> 8) / 16777216.0f * 2.0f - 1.0f);
  }
  return v;
}

// An NVFP4 (TE) kernel output for 4 x 64 inputs with two planted faults: the scale of
// block 5 one code too large, and the low nibble (element 100) of code byte 50 flipped.
struct kernel_output {
  std::vector<float> x;
  std::vector<std::uint8_t> codes, scales;
  std::uint8_t scale5 = 0, code100 = 0;
};
kernel_output faulty_nvfp4() {
  kernel_output k;
  k.x = noise(256, 5.0f, 11);
  const b::nvfp4_te s{};
  k.codes.resize(128);
  k.scales.resize(16);
  b::quantize(s, k.x.data(), k.x.size(), b::tensor_value::computed(), k.codes.data(), k.codes.size(),
              k.scales.data(), k.scales.size());
  k.scale5 = k.scales[5];
  k.scales[5] = static_cast<std::uint8_t>(k.scale5 + 1);
  k.code100 = static_cast<std::uint8_t>(k.codes[50] & 0x0F);
  k.codes[50] = static_cast<std::uint8_t>(k.codes[50] ^ 0x01);
  return k;
}

verify_buffers buffers_of(const kernel_output& k) {
  verify_buffers bf;
  bf.input = k.x.data();
  bf.shape = {4, 64};
  bf.codes = k.codes.data();
  bf.code_bytes = k.codes.size();
  bf.scales = k.scales.data();
  bf.scale_dtype = scale_type::u8;
  bf.scale_count = k.scales.size();
  return bf;
}

}  // namespace

TEST_CASE("check, npy_verify and kvq verify --dump give the same report", "[verify][check][cli]") {
  const kernel_output k = faulty_nvfp4();
  const verify_report a = check("nvfp4_te", buffers_of(k));

  // What the planted faults must produce, independently of the three paths.
  CHECK_FALSE(a.ok());
  CHECK(a.codes.mismatches >= 1);
  CHECK(a.scales.mismatches == 1);
  REQUIRE(a.has_explanation);
  CHECK(a.explained.scale_blocks == 1);
  REQUIRE(a.explained.scales_listed.size() == 1);
  CHECK(a.explained.scales_listed[0].block == 5);
  CHECK(a.explained.scales_listed[0].want_scale_code == k.scale5);
  CHECK(a.explained.scales_listed[0].got_scale_code == k.scale5 + 1u);
  CHECK(a.explained.element_errors == 1);
  std::size_t element_rows = 0;
  for (const element_mismatch& m : a.explained.elements_listed) {
    if (m.cls == mismatch_class::element) {
      ++element_rows;
      CHECK(m.index == 100);
      CHECK(m.want_code == k.code100);
      CHECK(m.got_code == (k.code100 ^ 1u));
    } else {
      CHECK(m.cls == mismatch_class::scale);
      CHECK(m.block == 5);
    }
  }
  CHECK(element_rows == 1);
  CHECK(a.codes.mismatches == a.explained.elements_listed.size());
  CHECK(a.tensor_source == tensor_value_source::computed);

  // The same buffers as .npy files: the .npy path and the command line.
  const fs::path dir = fs::temp_directory_path() / "kvq_test_check";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string in = (dir / "input.npy").string(), codes = (dir / "codes.npy").string(),
                    scales = (dir / "scales.npy").string(), dump = (dir / "m.csv").string();
  npy::write(in, npy::from_floats({4, 64}, k.x));
  npy::write(codes, npy::from_u8({4, 32}, k.codes));
  npy::write(scales, npy::from_u8({4, 4}, k.scales));
  npy_verify_request req;
  req.scheme = "nvfp4_te";
  req.input = in;
  req.codes = codes;
  req.scales = scales;
  const verify_report n = npy_verify(req);
  CHECK(n.codes.mismatches == a.codes.mismatches);
  CHECK(n.codes.expected_hash == a.codes.expected_hash);
  CHECK(n.codes.actual_hash == a.codes.actual_hash);
  CHECK(n.scales.mismatches == a.scales.mismatches);
  CHECK(mismatch_csv(n.explained) == mismatch_csv(a.explained));
  CHECK(to_string(n) == to_string(a));

  const run_result r = run({"--scheme", "nvfp4_te", "--input", in, "--codes", codes, "--scales", scales, "--dump", dump});
  CHECK(r.status == 1);
  CHECK(read_text(dump) == mismatch_csv(a.explained));
  // The command prints check()'s report, the --dump line before its verdict.
  std::ostringstream want;
  print_details(want, a);
  want << "wrote " << a.explained.elements_listed.size() << " mismatching elements to " << dump << "\nMISMATCH\n";
  CHECK(r.out == want.str());
  fs::remove_all(dir);
}

TEST_CASE("check: 4-bit codes packed or one per byte, through the library's packing", "[verify][check]") {
  const std::vector<float> x = noise(64, 7.0f, 3);
  std::vector<std::uint8_t> one(64);
  kvq::encode_n<kvq::fmt::e2m1>(x.data(), x.size(), one.data());
  std::vector<std::uint8_t> packed(32);
  b::pack_codes(one.data(), one.size(), 4, packed.data());
  one[9] = static_cast<std::uint8_t>(one[9] ^ 0x2);
  packed[4] = static_cast<std::uint8_t>(packed[4] ^ 0x20);  // element 9: high nibble of byte 4
  for (const auto* c : {&one, &packed}) {
    verify_buffers bf;
    bf.input = x.data();
    bf.shape = {2, 32};
    bf.codes = c->data();
    bf.code_bytes = c->size();
    const verify_report r = check("e2m1", bf);
    CHECK(r.codes.mismatches == 1);
    REQUIRE(r.codes.first.size() == 1);
    CHECK(r.codes.first[0].index == 9);
    CHECK(r.codes.element_bits == 4);
    CHECK_FALSE(r.has_explanation);  // element formats have no blocks to explain
  }
}

TEST_CASE("check: int8_per_token_head, verified but not explained", "[verify][check]") {
  const std::vector<float> x = noise(3 * 16, 2.0f, 5);
  b::int8_per_token_head s{};
  s.head_dim = 16;
  std::vector<std::uint8_t> codes(48);
  std::vector<float> scales(3);
  b::quantize(s, x.data(), x.size(), b::tensor_value::computed(), codes.data(), codes.size(), scales.data(),
              scales.size());
  verify_buffers bf;
  bf.input = x.data();
  bf.shape = {3, 16};
  bf.codes = codes.data();
  bf.code_bytes = codes.size();
  bf.scales = scales.data();
  bf.scale_dtype = scale_type::f32;
  bf.scale_count = scales.size();
  CHECK(check("int8_per_token_head", bf).ok());
  codes[20] = static_cast<std::uint8_t>(codes[20] + 1);
  const verify_report r = check("int8_per_token_head", bf);
  CHECK(r.codes.mismatches == 1);
  CHECK(r.codes.name == "codes (int8)");
  CHECK_FALSE(r.has_explanation);
  CHECK_FALSE(find_verifiable("int8_per_token_head").explained);
  CHECK(find_verifiable("fp8_per_token_head").explained);
}

TEST_CASE("check refuses what does not fit, naming the problem", "[verify][check]") {
  const kernel_output k = faulty_nvfp4();
  verify_buffers bf = buffers_of(k);
  verify_options o;
  o.round = kvq::rounding::toward_zero;
  CHECK_THROWS_WITH(check("nvfp4_te", bf, o), Catch::Contains("rounding/overflow apply to element formats"));
  o = {};
  bf.code_bytes = 100;
  bf.codes_name = "codes file 'c.npy'";
  CHECK_THROWS_WITH(check("nvfp4_te", bf, o),
                    Catch::Contains("codes file 'c.npy' holds 100 bytes; the input has 256 elements"));
  bf = buffers_of(k);
  bf.scale_count = 3;
  CHECK_THROWS_WITH(check("nvfp4_te", bf), Catch::Contains("scales holds 3 scales; 16 blocks expected"));
  bf = buffers_of(k);
  bf.scale_dtype = scale_type::f32;
  CHECK_THROWS_WITH(check("nvfp4_te", bf), Catch::Contains("has uint8 scale codes"));
  bf.scale_dtype = scale_type::none;
  CHECK_THROWS_WITH(check("nvfp4_te", bf), Catch::Contains("scales is required"));
  bf = buffers_of(k);
  bf.input = nullptr;
  CHECK_THROWS_WITH(check("nvfp4_te", bf), Catch::Contains("the input is null"));
  bf = buffers_of(k);
  bf.shape = {4, 63};  // 252 elements: not whole blocks of 16
  CHECK_THROWS_WITH(check("nvfp4_te", bf), Catch::Contains("not a multiple of the block size 16"));
  bf = buffers_of(k);
  o.tensor_value = 1.0f;
  bf.scale_dtype = scale_type::none;
  CHECK_THROWS_WITH(check("e4m3", bf, o), Catch::Contains("element-wise"));
  CHECK_THROWS_WITH(check("kivi_int4", bf), Catch::Contains("zero points"));
  CHECK_THROWS_WITH(check("bf16", bf), Catch::Contains("high-precision"));
  CHECK_THROWS_WITH(check("nvfp5", bf), Catch::Contains("unknown scheme 'nvfp5'") && Catch::Contains("nvfp4_te"));
  // an alias resolves to its canonical scheme through the registry
  CHECK(find_verifiable("fp8_e4m3_per_tensor").name == "fp8_e4m3_cal");
}

}  // namespace test_check_cpp
