// Buffer comparison, mismatch reports, the content hash and the element decoders.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <kvq/format.hpp>
#include <kvq/verify/compare.hpp>
#include <kvq/verify/element.hpp>
#include <kvq/verify/hash.hpp>

using namespace kvq::verify;

namespace {
std::uint64_t fnv(const std::string& s) {
  return fnv1a64_bytes(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
}
}  // namespace

TEST_CASE("fnv1a64: published test vectors", "[verify][hash]") {
  // Test vectors of the FNV reference (Landon Curt Noll's fnv test suite).
  CHECK(fnv("") == 0xcbf29ce484222325ULL);
  CHECK(fnv("a") == 0xaf63dc4c8601ec8cULL);
  CHECK(fnv("foobar") == 0x85944171f73967e8ULL);
  // streaming little-endian value == the bytes in memory order
  fnv1a64 h;
  h.value_le(0x0201, 2);
  const std::uint8_t b[2] = {1, 2};
  CHECK(h.value() == fnv1a64_bytes(b, 2));
}

TEST_CASE("compare_codes: count, first N, inputs, decoded values, hashes", "[verify][compare]") {
  std::vector<std::uint8_t> want(100), got;
  std::vector<float> in(100);
  for (int i = 0; i < 100; ++i) {
    in[static_cast<std::size_t>(i)] = static_cast<float>(i) * 0.25f;
    want[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(i);
  }
  got = want;
  // corrupt indices 3, 50, 51, 99
  for (int i : {3, 50, 51, 99}) got[static_cast<std::size_t>(i)] ^= 0x01;
  const report r = compare_codes<kvq::fmt::e4m3>(want.data(), got.data(), 100, in.data(), 3);
  CHECK(r.elements == 100);
  CHECK(r.mismatches == 4);
  CHECK_FALSE(r.ok());
  REQUIRE(r.first.size() == 3);
  CHECK(r.first[0].index == 3);
  CHECK(r.first[1].index == 50);
  CHECK(r.first[2].index == 51);
  CHECK(r.first[0].has_input);
  CHECK(r.first[0].input == 0.75f);
  CHECK(r.first[0].expected_bits == 3);
  CHECK(r.first[0].actual_bits == 2);
  // e4m3 code 3 = 3 * 2^-9 (subnormal), code 2 = 2^-8
  CHECK(r.first[0].expected_value == 3.0 / 512.0);
  CHECK(r.first[0].actual_value == 2.0 / 512.0);
  // code 0x33 (51) = 2^(6-7) * (1 + 3/8) = 0.6875; 0x32 = 0.625
  CHECK(r.first[2].expected_value == 0.6875);
  CHECK(r.first[2].actual_value == 0.625);
  CHECK(r.expected_hash == fnv1a64_bytes(want.data(), 100));
  CHECK(r.actual_hash == fnv1a64_bytes(got.data(), 100));
  const std::string text = to_string(r, {10, 10});
  CHECK(text.find("codes (e4m3): 4 of 100 elements differ") != std::string::npos);
  CHECK(text.find("(5, 0)") != std::string::npos);  // index 50 in a 10 x 10 shape
  CHECK(text.find("... 1 more") != std::string::npos);
  // identical buffers
  const report same = compare_codes<kvq::fmt::e4m3>(want.data(), want.data(), 100);
  CHECK(same.ok());
  CHECK(same.first.empty());
  CHECK(same.expected_hash == same.actual_hash);
}

TEST_CASE("compare floats bit for bit: -0 vs +0 and NaN payloads differ", "[verify][compare]") {
  const float qnan = kvq::bit_cast<float>(0x7FC00000u);
  const float qnan2 = kvq::bit_cast<float>(0x7FC00001u);
  std::vector<float> a{0.0f, 1.0f, qnan, 2.0f}, b{-0.0f, 1.0f, qnan2, 2.0f};
  const report r = compare(a.data(), b.data(), a.size(), "out", float_decoder{});
  CHECK(r.mismatches == 2);
  CHECK(r.first[0].index == 0);
  CHECK(r.first[0].expected_bits == 0u);
  CHECK(r.first[0].actual_bits == 0x80000000u);
  CHECK(r.first[1].index == 2);
  CHECK(r.element_bits == 32);
  // streaming in two batches gives the same report as one call
  comparator<float, float_decoder> c("out");
  c.add(a.data(), b.data(), 1);
  c.add(a.data() + 1, b.data() + 1, 3);
  const report r2 = c.result();
  CHECK(r2.mismatches == 2);
  CHECK(r2.first[1].index == 2);
  CHECK(r2.expected_hash == r.expected_hash);
  CHECK(r2.actual_hash == r.actual_hash);
}

TEST_CASE("packed 4-bit codes: the element index of a corrupted nibble", "[verify][compare]") {
  // 7 elements in 4 bytes, element 2i in the low nibble of byte i
  std::vector<std::uint8_t> codes{0x21, 0x43, 0x65, 0x07};
  for (std::size_t i = 0; i < 7; ++i) CHECK(unpack_code(codes.data(), i, 4) == i + 1);
  auto bad = codes;
  bad[2] = 0x6D;  // element 4: 5 -> 0xD
  const report r = compare_packed_codes<kvq::fmt::e2m1>(codes.data(), bad.data(), 7, 4);
  CHECK(r.mismatches == 1);
  REQUIRE(r.first.size() == 1);
  CHECK(r.first[0].index == 4);
  CHECK(r.first[0].expected_bits == 0x5);
  CHECK(r.first[0].actual_bits == 0xD);
  // e2m1 0x5 = 3, 0xD = -3
  CHECK(r.first[0].expected_value == 3.0);
  CHECK(r.first[0].actual_value == -3.0);
  CHECK(r.expected_hash == fnv1a64_bytes(codes.data(), 4));
  // 2-bit unpacking: four per byte from bit 0
  const std::uint8_t two = 0xE4;  // 11 10 01 00
  for (std::size_t i = 0; i < 4; ++i) CHECK(unpack_code(&two, i, 2) == i);
}

TEST_CASE("fp16 and bf16 decoders: all 65536 patterns against the binary16 formula", "[verify][element]") {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const int s = (h >> 15) & 1, e = (h >> 10) & 0x1F, m = h & 0x3FF;
    const float got = kvq::fp16_to_float(static_cast<std::uint16_t>(h));
    if (e == 31) {
      if (m == 0) {
        CHECK(std::isinf(got));
      } else {
        REQUIRE(std::isnan(got));
        // payload kept: the quiet bit and the top payload bits shift into the float's
        CHECK((kvq::bit_cast<std::uint32_t>(got) & 0x7FFFFFu) == static_cast<std::uint32_t>(m) << 13);
      }
      CHECK(std::signbit(got) == (s == 1));
      continue;
    }
    const double mag = e == 0 ? std::ldexp(m, -24) : std::ldexp(1024 + m, e - 25);
    const double want = s ? -mag : mag;
    if (got != static_cast<float>(want) || std::signbit(got) != (s == 1)) {
      FAIL_CHECK("fp16 0x" << std::hex << h << ": got " << got << ", want " << want);
    }
  }
  CHECK(kvq::bf16_to_float(0x3F80) == 1.0f);
  CHECK(kvq::bf16_to_float(0xC0A0) == -5.0f);
  CHECK(bf16_decoder{}(0x0001) == std::ldexp(1.0, -133));
}

TEST_CASE("differs_at and same_bits are usable as plain functors", "[verify][element]") {
  const float a[3] = {1.0f, 0.0f, 3.0f};
  const float b[3] = {1.0f, -0.0f, 3.0f};
  differs_at<float> d{a, b};
  CHECK_FALSE(d(0));
  CHECK(d(1));
  CHECK(same_bits{}(1.5, 1.5));
  static_assert(raw_bits(std::uint8_t{0xAB}) == 0xAB, "raw bits of a byte");
}
