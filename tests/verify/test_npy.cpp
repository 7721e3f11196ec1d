// The .npy reader and writer: files written by NumPy 1.24 (tests/verify/data, made with
// numpy.lib.format.write_array), round trips, and malformed input.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include <kvq/verify/npy.hpp>

using namespace kvq::verify;
namespace fs = std::filesystem;

namespace {
const std::string data_dir = KVQ_TEST_DATA_DIR;

std::vector<std::uint8_t> image(const std::string& dict, const std::vector<std::uint8_t>& data, int major = 1) {
  std::vector<std::uint8_t> v{0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<std::uint8_t>(major), 0};
  const std::size_t hlen = dict.size();
  v.push_back(static_cast<std::uint8_t>(hlen & 0xFF));
  v.push_back(static_cast<std::uint8_t>(hlen >> 8));
  if (major != 1) {
    v.push_back(static_cast<std::uint8_t>(hlen >> 16));
    v.push_back(static_cast<std::uint8_t>(hlen >> 24));
  }
  v.insert(v.end(), dict.begin(), dict.end());
  v.insert(v.end(), data.begin(), data.end());
  return v;
}

std::string parse_error(const std::vector<std::uint8_t>& img) {
  try {
    npy::parse(img.data(), img.size());
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

fs::path temp_dir(const char* name) {
  const fs::path p = fs::temp_directory_path() / (std::string("kvq_test_npy_") + name);
  fs::remove_all(p);
  fs::create_directories(p);
  return p;
}
}  // namespace

TEST_CASE("npy: files written by NumPy", "[verify][npy]") {
  {
    // np.arange(6, dtype='<f4').reshape(2, 3) - 2.5
    const auto a = npy::read(data_dir + "/f4_2x3.npy");
    CHECK(a.type == npy::dtype::f32);
    CHECK(a.shape == std::vector<std::size_t>{2, 3});
    CHECK(a.to_float() == std::vector<float>{-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f});
  }
  {
    // float16 [0, -0, 1, 65504, 2^-24]
    const auto a = npy::read(data_dir + "/f2_5.npy");
    CHECK(a.type == npy::dtype::f16);
    const auto v = a.to_float();
    REQUIRE(v.size() == 5);
    CHECK(v[0] == 0.0f);
    CHECK(std::signbit(v[1]));
    CHECK(v[2] == 1.0f);
    CHECK(v[3] == 65504.0f);
    CHECK(v[4] == std::ldexp(1.0f, -24));
  }
  {
    // uint16 bfloat16 bits [0x3F80, 0xBF80, 0x7F80, 0x0001] = 1, -1, inf, 2^-133
    const auto a = npy::read(data_dir + "/u2_bf16_4.npy");
    CHECK(a.type == npy::dtype::u16);
    CHECK(a.as_u16() == std::vector<std::uint16_t>{0x3F80, 0xBF80, 0x7F80, 0x0001});
    const auto v = a.to_float();
    CHECK(v[0] == 1.0f);
    CHECK(v[1] == -1.0f);
    CHECK(std::isinf(v[2]));
    CHECK(v[3] == std::ldexp(1.0f, -133));
  }
  {
    const auto a = npy::read(data_dir + "/u1_2x2x2.npy");  // np.arange(8, dtype='|u1').reshape(2,2,2)
    CHECK(a.type == npy::dtype::u8);
    CHECK(a.shape == std::vector<std::size_t>{2, 2, 2});
    CHECK(a.as_u8() == std::vector<std::uint8_t>{0, 1, 2, 3, 4, 5, 6, 7});
    CHECK_THROWS_AS(a.to_float(), std::invalid_argument);
  }
  {
    const auto a = npy::read(data_dir + "/f4_scalar.npy");  // np.array(7.5, '<f4'): shape ()
    CHECK(a.shape.empty());
    CHECK(a.count() == 1);
    CHECK(a.to_float() == std::vector<float>{7.5f});
  }
  {
    const auto a = npy::read(data_dir + "/f4_empty_0x3.npy");
    CHECK(a.shape == std::vector<std::size_t>{0, 3});
    CHECK(a.count() == 0);
    CHECK(a.data.empty());
  }
  for (const char* f : {"/f4_v2.npy", "/f4_v3.npy"}) {  // format versions 2.0 and 3.0 of [1.5, 2.5]
    const auto a = npy::read(data_dir + f);
    CHECK(a.to_float() == std::vector<float>{1.5f, 2.5f});
  }
}

TEST_CASE("npy: unsupported NumPy files are rejected with the reason", "[verify][npy]") {
  const auto msg = [](const char* f) {
    try {
      npy::read(data_dir + f);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  CHECK(msg("/bad_fortran.npy").find("fortran_order True") != std::string::npos);
  CHECK(msg("/bad_bigendian.npy").find("little-endian") != std::string::npos);
  CHECK(msg("/bad_int32.npy").find("dtype '<i4' is not supported") != std::string::npos);
  CHECK(msg("/bad_f8.npy").find("dtype '<f8' is not supported") != std::string::npos);
  CHECK(msg("/bad_structured.npy").find("structured") != std::string::npos);
  CHECK(msg("/bad_int32.npy").find("bad_int32.npy") != std::string::npos);  // names the file
  CHECK_THROWS_AS(npy::read(data_dir + "/does_not_exist.npy"), std::runtime_error);
}

TEST_CASE("npy: write then read gives the same array; NumPy-compatible header", "[verify][npy]") {
  const fs::path dir = temp_dir("roundtrip");
  const std::vector<npy::array> arrays = {
      npy::from_floats({2, 3}, {1, 2, 3, 4, 5, -0.0f}),
      npy::from_floats({}, {42.0f}),
      npy::from_floats({0}, {}),
      npy::from_u8({4}, {0, 0x7F, 0x80, 0xFF}),
      npy::from_u16({1, 2}, {0x3F80, 0xFFFF}),
      npy::from_u16({3}, {0x3C00, 0x8000, 0x7C00}, npy::dtype::f16),
  };
  int k = 0;
  for (const auto& a : arrays) {
    const std::string p = (dir / ("a" + std::to_string(k++) + ".npy")).string();
    npy::write(p, a);
    const auto b = npy::read(p);
    CHECK(b.type == a.type);
    CHECK(b.shape == a.shape);
    CHECK(b.data == a.data);
    const auto img = npy::serialize(a);
    CHECK((img.size() - a.data.size()) % 64 == 0);  // header padded to 64 bytes
  }
  // the header NumPy writes, byte for byte up to the padding
  const auto img = npy::serialize(arrays[0]);
  const std::string want = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  const std::string head(img.begin() + 10, img.begin() + 10 + static_cast<std::ptrdiff_t>(want.size()));
  CHECK(head == want);
  CHECK(img[img.size() - arrays[0].data.size() - 1] == '\n');
  // no temporary files left behind
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    (void)e;
    ++files;
  }
  CHECK(files == arrays.size());
  // a failed write leaves nothing and names the path
  CHECK_THROWS_AS(npy::write((dir / "no_such_dir" / "x.npy").string(), arrays[0]), std::runtime_error);
  CHECK_THROWS_AS(npy::from_floats({2, 2}, {1, 2, 3}), std::invalid_argument);
  fs::remove_all(dir);
}

TEST_CASE("npy: malformed images are rejected, never crash", "[verify][npy]") {
  const std::vector<std::uint8_t> four{0, 0, 128, 63};  // one float 1.0
  const std::string ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }\n";
  REQUIRE(parse_error(image(ok, four)).empty());
  // every truncation of a valid image
  const auto full = image(ok, four);
  for (std::size_t n = 0; n < full.size(); ++n) {
    std::vector<std::uint8_t> t(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(n));
    CHECK_FALSE(parse_error(t).empty());
  }
  // trailing bytes after the data
  auto longer = full;
  longer.push_back(0);
  CHECK(parse_error(longer).find("data length 5 bytes does not match shape (1,)") != std::string::npos);
  // magic and version
  auto bad = full;
  bad[1] = 'X';
  CHECK(parse_error(bad).find("bad magic") != std::string::npos);
  bad = full;
  bad[6] = 4;
  CHECK(parse_error(bad).find("version 4.0") != std::string::npos);
  bad = full;
  bad[7] = 1;
  CHECK(parse_error(bad).find("version 1.1") != std::string::npos);
  // header length beyond the limit (v2: 4-byte length)
  {
    std::vector<std::uint8_t> v{0x93, 'N', 'U', 'M', 'P', 'Y', 2, 0, 0x01, 0x00, 0x01, 0x00};  // 65537
    CHECK(parse_error(v).find("exceeds the limit of 65536") != std::string::npos);
  }
  // v2 header accepted
  CHECK(parse_error(image(ok, four, 2)).empty());
  CHECK(parse_error(image(ok, four, 3)).empty());
  struct bad_case {
    std::string dict;
    std::string expect;
  };
  const std::vector<bad_case> cases = {
      {"{'descr': '<f4', 'fortran_order': False}", "no 'shape'"},
      {"{'descr': '<f4', 'shape': (1,)}", "no 'fortran_order'"},
      {"{'fortran_order': False, 'shape': (1,)}", "no 'descr'"},
      {"{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", "duplicate key 'descr'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}", "unexpected key 'x'"},
      {"{'descr': '<f4', 'fortran_order': True, 'shape': (1,)}", "fortran_order True"},
      {"{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", "True or False"},
      {"{'descr': '<f4', 'fortran_order': Falsey, 'shape': (1,)}", "True or False"},
      {"{'descr': '>f4', 'fortran_order': False, 'shape': (1,)}", "little-endian"},
      {"{'descr': '<i8', 'fortran_order': False, 'shape': (1,)}", "'<i8' is not supported"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}", "structured"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1)}", "not a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': [1]}", "must be a tuple"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,)}", "non-negative integer"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (01,)}", "leading zeros"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "does not fit in 64 bits"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}", "overflows the element count"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904,)}", "overflows the byte count"},
      {"{'descr': '<f\\x34', 'fortran_order': False, 'shape': (1,)}", "escape"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x", "after the header"},
      {"{'descr': '<f4' 'fortran_order': False, 'shape': (1,)}", "expected ',' or '}'"},
      {"{'descr' '<f4', 'fortran_order': False, 'shape': (1,)}", "missing ':'"},
      {"['descr']", "does not start with '{'"},
      {"{'descr': '<f4, 'fortran_order': False, 'shape': (1,)}", ""},
      {"{descr: '<f4', 'fortran_order': False, 'shape': (1,)}", "quoted string"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (1,", "expected"},
  };
  for (const auto& c : cases) {
    INFO(c.dict);
    const std::string e = parse_error(image(c.dict, four));
    CHECK_FALSE(e.empty());
    CHECK(e.find(c.expect) != std::string::npos);
  }
  // 65 dimensions
  std::string many = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (int i = 0; i < 65; ++i) many += "1, ";
  many += ")}";
  CHECK(parse_error(image(many, four)).find("more than 64 dimensions") != std::string::npos);
  // non-ASCII and NUL bytes in the header
  std::string nonascii = ok;
  nonascii[3] = static_cast<char>(0xC3);
  CHECK(parse_error(image(nonascii, four)).find("not printable ASCII") != std::string::npos);
  std::string nul = ok;
  nul[nul.size() - 2] = '\0';
  CHECK(parse_error(image(nul, four)).find("not printable ASCII") != std::string::npos);
  // accepted variants: double quotes, no spaces, no trailing comma, '<u1', an empty shape
  CHECK(parse_error(image("{\"descr\":\"<f4\",\"fortran_order\":False,\"shape\":(1,)}", four)).empty());
  CHECK(parse_error(image("{'shape': (2, 2), 'fortran_order': False, 'descr': '<u1'}", four)).empty());
  CHECK(parse_error(image("{'descr': '<f4', 'fortran_order': False, 'shape': ()}", four)).empty());
}
