// --shard I/N: the parsing of shard specs, the partition of tasks among shards, and the
// slot codec, whose doubles must come back with the very bits they left with (compared
// as 64-bit patterns, NaN payloads and signed zeros included).
#include <catch2/catch.hpp>

#include <kvq/study/shard.hpp>

#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using namespace kvq::study;

namespace {
std::uint64_t bits(double d) {
  std::uint64_t b = 0;
  std::memcpy(&b, &d, sizeof b);
  return b;
}
double from_bits(std::uint64_t b) {
  double d = 0;
  std::memcpy(&d, &b, sizeof d);
  return d;
}
}  // namespace

TEST_CASE("shard specs: I/N with 1 <= I <= N", "[study][shard]") {
  const shard_spec s = parse_shard("2/4");
  CHECK(s.index == 2);
  CHECK(s.count == 4);
  CHECK(parse_shard("1/1").count == 1);
  for (const char* bad : {"3/2", "0/0", "a/b", "1/0", "0/3", "2", "/", "1/", "/2", "1/2/3", "-1/2", "+1/2", " 1/2",
                          "1/2 ", "", "1/1000001"})
    CHECK_THROWS_AS(parse_shard(bad), usage_error);
}

TEST_CASE("every task belongs to exactly one shard", "[study][shard]") {
  for (unsigned n = 1; n <= 7; ++n)
    for (std::size_t task = 0; task < 50; ++task) {
      unsigned owners = 0;
      for (unsigned i = 1; i <= n; ++i) owners += shard_spec{i, n}.owns(task) ? 1u : 0u;
      CHECK(owners == 1);
    }
}

TEST_CASE("slot codec: doubles come back bit for bit", "[study][shard]") {
  const std::vector<std::uint64_t> patterns = {
      0x0000000000000000ull,  // +0
      0x8000000000000000ull,  // -0
      0x7ff0000000000000ull,  // +inf
      0xfff0000000000000ull,  // -inf
      0x7ff8000000000001ull,  // quiet NaN with a payload
      0xfff4000000000000ull,  // negative signalling-pattern NaN
      0x0000000000000001ull,  // smallest subnormal
      0x000fffffffffffffull,  // largest subnormal
      0x3fb999999999999aull,  // 0.1
      0x7fefffffffffffffull,  // largest finite
  };
  for (std::uint64_t p : patterns) {
    double back = 1.0;
    const json j = json::parse(dump_json(encode_slot(from_bits(p)), -1));  // through text, as in a file
    decode_slot(j, back);
    CHECK(bits(back) == p);
  }
}

TEST_CASE("slot codec: cells keep their kind and value", "[study][shard]") {
  const std::vector<cell> row = {cell("nvfp4_te"), cell(-3LL), cell(from_bits(0x7ff8000000000001ull)), cell(-0.0),
                                 cell("a,\"b\"")};
  std::vector<cell> back;
  decode_slot(json::parse(dump_json(encode_slot(row), -1)), back);
  REQUIRE(back.size() == row.size());
  for (std::size_t i = 0; i < row.size(); ++i) {
    CHECK(back[i].k == row[i].k);
    CHECK(back[i].i == row[i].i);
    CHECK(bits(back[i].d) == bits(row[i].d));
    CHECK(back[i].s == row[i].s);
  }
}
