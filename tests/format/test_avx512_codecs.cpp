// The 16-lane kernels of kvq/format/avx512.hpp (built with -march=native: they exist
// where the compiler targets AVX-512) against the scalar functions they reproduce, bit for
// bit: encode_rne16<F, O> against kvq::encode<F> (nearest even, satfinite and nosat) and
// e2m1_codes16 against kvq::encode<fmt::e2m1> and detail::e2m1_rn, on every 61st float bit
// pattern, on every pattern within 3 of a multiple of 2^19 (each float with at most four
// significant mantissa bits: every rounding boundary and tie of the 1- to 3-bit mantissa
// formats, in the normal and subnormal binades, and every e2m1 table cell's first value)
// and on random patterns; decode16<F> against kvq::decode<F, float> and e2m1_values16
// against detail::e2m1_value on every code.
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <kvq/block.hpp>
#include <kvq/format.hpp>
#include <kvq/format/avx512.hpp>

#if defined(KVQ_HAVE_AVX512_CODECS)
namespace {

std::uint32_t bits_of(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}
float float_of(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// The float patterns every encoder check runs on.
std::vector<std::uint32_t> patterns() {
  std::vector<std::uint32_t> p;
  for (std::uint64_t u = 0; u < (std::uint64_t{1} << 32); u += 61) p.push_back(static_cast<std::uint32_t>(u));
  for (std::uint64_t k = 0; k < (std::uint64_t{1} << 13); ++k)
    for (int d = -3; d <= 3; ++d) p.push_back(static_cast<std::uint32_t>((k << 19) + static_cast<std::uint64_t>(d)));
  std::uint64_t s = 0x9E3779B97F4A7C15u;
  for (int i = 0; i < (1 << 20); ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    p.push_back(static_cast<std::uint32_t>(s));
  }
  while (p.size() % 16) p.push_back(0);
  return p;
}

// First mismatch of kernel (16 floats -> 16 codes in 32-bit lanes) against ref, or "".
template <class Kernel, class Ref>
std::string first_mismatch(const std::vector<std::uint32_t>& p, Kernel kernel, Ref ref) {
  alignas(64) std::uint32_t out[16];
  for (std::size_t i = 0; i < p.size(); i += 16) {
    const __m512 x = _mm512_loadu_ps(reinterpret_cast<const float*>(p.data() + i));
    _mm512_store_si512(out, kernel(x));
    for (int k = 0; k < 16; ++k) {
      const std::uint32_t want = ref(float_of(p[i + k]));
      if (out[k] != want)
        return "input 0x" + std::to_string(p[i + k]) + ": " + std::to_string(out[k]) + " vs " + std::to_string(want);
    }
  }
  return {};
}

template <class F>
void check_encode(const std::vector<std::uint32_t>& p) {
  INFO(kvq::format_name<F>());
  CHECK(first_mismatch(
            p, [](__m512 x) { return kvq::detail::avx512::encode_rne_sat16<F>(x); },
            [](float v) -> std::uint32_t {
              return kvq::encode<F>(v, kvq::rounding::nearest_even, kvq::overflow::satfinite);
            }) == "");
  CHECK(first_mismatch(
            p, [](__m512 x) { return kvq::detail::avx512::encode_rne16<F, kvq::overflow::nosat>(x); },
            [](float v) -> std::uint32_t {
              return kvq::encode<F>(v, kvq::rounding::nearest_even, kvq::overflow::nosat);
            }) == "");
}

template <class F>
void check_decode() {
  INFO(kvq::format_name<F>());
  std::uint8_t codes[256];
  for (int c = 0; c < 256; ++c) codes[c] = static_cast<std::uint8_t>(c);
  alignas(64) float out[16];
  for (int c0 = 0; c0 < 256; c0 += 16) {
    _mm512_store_ps(out, kvq::detail::avx512::decode16<F>(codes + c0));
    for (int k = 0; k < 16; ++k) {
      INFO("code " << c0 + k);
      CHECK(bits_of(out[k]) == bits_of(kvq::decode<F, float>(static_cast<std::uint8_t>(c0 + k))));
    }
  }
}

}  // namespace

TEST_CASE("16-lane encoders give the scalar encoder's codes", "[avx512]") {
  const std::vector<std::uint32_t> p = patterns();
  check_encode<kvq::fmt::e4m3>(p);
  check_encode<kvq::fmt::e5m2>(p);
  check_encode<kvq::fmt::e3m2>(p);
  check_encode<kvq::fmt::e2m3>(p);
  check_encode<kvq::fmt::e2m1>(p);
  CHECK(first_mismatch(
            p, [](__m512 x) { return kvq::detail::avx512::e2m1_codes16(x); },
            [](float v) -> std::uint32_t {
              return kvq::encode<kvq::fmt::e2m1>(v, kvq::rounding::nearest_even, kvq::overflow::satfinite);
            }) == "");
  CHECK(first_mismatch(
            p, [](__m512 x) { return kvq::detail::avx512::e2m1_codes16(x); },
            [](float v) -> std::uint32_t { return kvq::block::detail::e2m1_rn(v); }) == "");
}

TEST_CASE("16-lane decoders give the scalar decoder's values", "[avx512]") {
  check_decode<kvq::fmt::e4m3>();
  check_decode<kvq::fmt::e5m2>();
  check_decode<kvq::fmt::e3m2>();
  check_decode<kvq::fmt::e2m3>();
  // every byte: both nibbles of each
  for (int b = 0; b < 256; b += 8) {
    std::uint8_t in[8];
    for (int k = 0; k < 8; ++k) in[k] = static_cast<std::uint8_t>(b + k);
    alignas(64) float out[16];
    _mm512_store_ps(out, kvq::detail::avx512::e2m1_values16(in));
    for (int k = 0; k < 16; ++k) {
      const std::uint8_t code = static_cast<std::uint8_t>(k % 2 ? in[k / 2] >> 4 : in[k / 2] & 0x0F);
      INFO("byte " << b + k / 2 << " nibble " << k % 2);
      CHECK(bits_of(out[k]) == bits_of(kvq::block::detail::e2m1_value(code)));
    }
  }
}

TEST_CASE("16-lane e2m1 packing puts element 2i in the low nibble of byte i", "[avx512]") {
  alignas(64) std::uint32_t c[32];
  for (int i = 0; i < 32; ++i) c[i] = static_cast<std::uint32_t>((i * 7 + 3) % 16);
  std::uint8_t out[24] = {};
  kvq::detail::avx512::store_e2m1_32(_mm512_load_si512(c), _mm512_load_si512(c + 16), out);
  kvq::detail::avx512::store_e2m1_16(_mm512_load_si512(c + 16), out + 16);
  for (int i = 0; i < 16; ++i) CHECK(out[i] == (c[2 * i] | (c[2 * i + 1] << 4)));
  for (int i = 0; i < 8; ++i) CHECK(out[16 + i] == (c[16 + 2 * i] | (c[16 + 2 * i + 1] << 4)));
}
#else
TEST_CASE("16-lane kernels: not compiled for this target", "[avx512]") {
  WARN("the compiler does not target AVX-512 (F, BW, DQ, VL, VBMI) here: kvq/format/avx512.hpp is not compiled");
}
#endif
