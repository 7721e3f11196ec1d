// The captured-KV readers (kvq/study/kv_file.hpp, safetensors.hpp, npz.hpp) against
// files written by independent writers: numpy.save / savez / savez_compressed and
// safetensors.numpy.save_file (tests/data/kv/make_kv_files.py). The oracle is the
// script's value formula, evaluated here in exact arithmetic (every value is a 7-bit
// integer times a power of two, exact in float32, float16 and bfloat16).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <kvq/study/kv_file.hpp>

using namespace kvq::study;

namespace {
const std::string dir = KVQ_KV_DATA_DIR;

float expected(std::size_t layer, std::size_t which, std::size_t head, std::size_t token, std::size_t chan) {
  const long long m = static_cast<long long>((7 * layer + 29 * which + 17 * head + 131 * token + 3 * chan) % 251);
  const int e = static_cast<int>(chan % 5) - 8;
  return static_cast<float>(std::ldexp(static_cast<double>(m - 125), e));
}

// Every element of q (head h), k and v (head kvh) equals the formula, bit for bit.
void check_head(const kv_head& h, std::size_t layer, std::size_t head, std::size_t kvh, bool pre) {
  REQUIRE(h.tokens == 16);
  REQUIRE(h.head_dim == 32);
  REQUIRE(h.q.rows() == 16);
  REQUIRE(h.q.cols() == 32);
  REQUIRE(h.kv_head_index == kvh);
  std::size_t bad = 0;
  for (std::size_t t = 0; t < 16; ++t)
    for (std::size_t c = 0; c < 32; ++c) {
      const auto r = static_cast<Eigen::Index>(t), cc = static_cast<Eigen::Index>(c);
      bad += h.q(r, cc) != expected(layer, pre ? 3 : 0, head, t, c);
      bad += h.k(r, cc) != expected(layer, pre ? 4 : 1, kvh, t, c);
      bad += h.v(r, cc) != expected(layer, 2, kvh, t, c);
    }
  CHECK(bad == 0);
}

kv_request req(const std::string& file, std::size_t layer = 0, std::size_t head = 0, kv_rope rope = kv_rope::post) {
  kv_request r;
  r.path = dir + "/" + file;
  r.layer = layer;
  r.head = head;
  r.rope = rope;
  return r;
}

std::string error_of(const kv_request& r) {
  try {
    load_kv_head(r);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST_CASE("safetensors F32 written by safetensors.numpy: every head, layer and RoPE variant", "[study][kv_file]") {
  for (std::size_t layer = 0; layer < 2; ++layer)
    for (std::size_t head = 0; head < 2; ++head) {
      const kv_head h = load_kv_head(req("small.safetensors", layer, head));
      CHECK(h.format == "safetensors");
      CHECK(h.q_heads == 2);
      CHECK(h.kv_heads == 1);
      CHECK(h.dtype == "F32");
      check_head(h, layer, head, 0, false);
    }
  const kv_head pre = load_kv_head(req("small.safetensors", 0, 1, kv_rope::pre));
  check_head(pre, 0, 1, 0, true);
  // __metadata__ is echoed as written.
  const json d = pre.describe();
  CHECK(d["metadata"]["model"] == "synthetic-test");
  CHECK(d["metadata"]["tokens"] == "16");
  CHECK(d["rope"] == "pre");
}

TEST_CASE("safetensors F16 (safetensors.numpy) and BF16 convert exactly", "[study][kv_file]") {
  const kv_head f16 = load_kv_head(req("small_f16.safetensors"));
  CHECK(f16.dtype == "F16");
  check_head(f16, 0, 0, 0, false);
  const kv_head bf16 = load_kv_head(req("small_bf16.safetensors"));
  CHECK(bf16.dtype == "BF16");
  check_head(bf16, 0, 0, 0, false);
}

TEST_CASE("npz: numpy.savez (stored) and savez_compressed (deflated, float16 layer)", "[study][kv_file]") {
  for (std::size_t head = 0; head < 2; ++head) {
    check_head(load_kv_head(req("small.npz", 0, head)), 0, head, 0, false);
    check_head(load_kv_head(req("small.npz", 1, head)), 1, head, 0, false);
    check_head(load_kv_head(req("small.npz", 0, head, kv_rope::pre)), 0, head, 0, true);
    check_head(load_kv_head(req("small_compressed.npz", 0, head)), 0, head, 0, false);
    const kv_head h16 = load_kv_head(req("small_compressed.npz", 1, head));
    CHECK(h16.dtype == "float16");
    check_head(h16, 1, head, 0, false);
  }
}

TEST_CASE("npy: a stacked [3, heads, tokens, head_dim] array from numpy.save", "[study][kv_file]") {
  const kv_head h = load_kv_head(req("small.npy"));
  CHECK(h.format == "npy");
  check_head(h, 0, 0, 0, false);
}

TEST_CASE("bad inputs name the problem", "[study][kv_file]") {
  CHECK_THAT(error_of(req("nosuch.safetensors")), Catch::Contains("no such file"));
  CHECK_THAT(error_of(req("small.txt")), Catch::Contains("unknown file type"));
  CHECK_THAT(error_of(req("")), Catch::Contains("not a regular file"));  // the directory itself
  CHECK_THAT(error_of(req("small.safetensors", 7)), Catch::Contains("--kv-layer 7 is out of range (the file has layers 0 to 1)"));
  CHECK_THAT(error_of(req("small.npz", 2)), Catch::Contains("--kv-layer 2 is out of range"));
  CHECK_THAT(error_of(req("small.safetensors", 0, 2)), Catch::Contains("--kv-head 2 is out of range"));
  CHECK_THAT(error_of(req("small.safetensors", 1, 0, kv_rope::pre)), Catch::Contains("layers.1.q_pre_rope is missing"));
  CHECK_THAT(error_of(req("small.npy", 0, 0, kv_rope::pre)), Catch::Contains("--kv-rope pre"));
  CHECK_THAT(error_of(req("small.npy", 1)), Catch::Contains("holds one layer"));
  CHECK_THAT(error_of(req("bad_missing_v.safetensors")), Catch::Contains("layers.0.v is missing"));
  CHECK_THAT(error_of(req("bad_shapes.safetensors")), Catch::Contains("shapes disagree: layers.0.k is [1, 16, 32], layers.0.v is [1, 8, 32]"));
  CHECK_THAT(error_of(req("bad_dtype.safetensors")), Catch::Contains("dtype I32"));
  CHECK_THAT(error_of(req("bad_truncated.safetensors")), Catch::Contains("lies beyond the data"));
  CHECK_THAT(error_of(req("bad_header_length.safetensors")), Catch::Contains("exceeds the limit"));
  CHECK_THAT(error_of(req("bad_header_json.safetensors")), Catch::Contains("not valid JSON"));
  CHECK_THAT(error_of(req("bad_crc.npz")), Catch::Contains("CRC-32 mismatch"));
}

TEST_CASE("safetensors header rules (hand-built images)", "[study][safetensors]") {
  auto image = [](const std::string& header, std::size_t data_bytes) {
    std::vector<std::uint8_t> v(8 + header.size() + data_bytes, 0);
    const std::uint64_t n = header.size();
    for (int i = 0; i < 8; ++i) v[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(n >> (8 * i));
    for (std::size_t i = 0; i < header.size(); ++i) v[8 + i] = static_cast<std::uint8_t>(header[i]);
    return v;
  };
  auto err = [](const std::vector<std::uint8_t>& v) -> std::string {
    try {
      safetensors::read_header(memory_source(v.data(), v.size()));
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  };
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  CHECK(err(image(ok, 8)).empty());
  CHECK(err(image(ok + "   ", 8)).empty());  // trailing padding
  CHECK_THAT(err(image(ok, 12)), Catch::Contains("cover 8 data bytes, the file holds 12"));
  CHECK_THAT(err(image(R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", 8)), Catch::Contains("needs 12"));
  CHECK_THAT(err(image(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8)), Catch::Contains("expected 0"));
  CHECK_THAT(err(image(R"({"a":{"dtype":"X9","shape":[1],"data_offsets":[0,4]}})", 4)), Catch::Contains("unknown dtype"));
  CHECK_THAT(err(image(R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4)), Catch::Contains("non-negative"));
  CHECK_THAT(err(image(R"({"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,4]}})", 4)),
             Catch::Contains("overflows"));
  CHECK_THAT(err(image(R"({"__metadata__":{"k":1}})", 0)), Catch::Contains("not a string"));
  CHECK_THAT(err(image(" {}", 0)), Catch::Contains("does not start with '{'"));
  CHECK(err(image("{}", 0)).empty());
}
