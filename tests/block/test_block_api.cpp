// Packing, 16-bit conversions, the checked API, memory accounting, round-trip error
// bounds and the documented bad-input behaviour of the block layer.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <kvq/block.hpp>

#include "block_oracle.hpp"

namespace kb = kvq::block;

TEST_CASE("pack/unpack round trip and the documented bit layout", "[block][pack]") {
  std::mt19937 g(7);
  for (int bits : {2, 4, 8}) {
    std::vector<std::uint8_t> codes(1000), back(1000);
    for (auto& c : codes) c = static_cast<std::uint8_t>(g() & ((1u << bits) - 1u));
    std::vector<std::uint8_t> packed(kb::packed_bytes(codes.size(), bits), 0xFF);
    kb::pack_codes(codes.data(), codes.size(), bits, packed.data());
    kb::unpack_codes(packed.data(), codes.size(), bits, back.data());
    CHECK(back == codes);
    CHECK(packed.size() == (codes.size() * static_cast<std::size_t>(bits) + 7) / 8);
  }
  const std::uint8_t four[4] = {0x1, 0x2, 0xA, 0xF};
  std::uint8_t p4[2];
  kb::pack_codes(four, 4, 4, p4);
  CHECK(p4[0] == 0x21);  // element 0 in the low nibble
  CHECK(p4[1] == 0xFA);
  const std::uint8_t two[4] = {1, 2, 3, 0};
  std::uint8_t p2[1];
  kb::pack_codes(two, 4, 2, p2);
  CHECK(p2[0] == (1 | (2 << 2) | (3 << 4)));
}

TEST_CASE("fp16 and bf16 conversions are exact and round to nearest even", "[block][io16]") {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    _Float16 ref;
    const std::uint16_t hb = static_cast<std::uint16_t>(h);
    std::memcpy(&ref, &hb, 2);
    const float want = static_cast<float>(ref);
    const float got = kvq::fp16_to_float(hb);
    if (std::isnan(want)) {
      REQUIRE(std::isnan(got));
    } else {
      REQUIRE(oracle::fbits(got) == oracle::fbits(want));
    }
    // bf16 widening is a shift
    REQUIRE(oracle::fbits(kvq::bf16_to_float(hb)) == (h << 16));
  }
  std::mt19937 g(3);
  std::vector<std::uint32_t> pats;
  for (int i = 0; i < 200000; ++i) pats.push_back(static_cast<std::uint32_t>(g()));
  for (std::uint32_t e : {0x477FF000u, 0x477FEFFFu, 0x33000000u, 0x33000001u, 0x387FE000u, 0x38800000u, 0x7F800000u,
                          0x00000001u, 0x7F7FFFFFu, 0x3F808000u, 0x3F818000u})
    pats.push_back(e), pats.push_back(e | 0x80000000u);
  for (std::uint32_t u : pats) {
    const float f = oracle::ffrom(u);
    const _Float16 ref = static_cast<_Float16>(f);
    std::uint16_t rb;
    std::memcpy(&rb, &ref, 2);
    const std::uint16_t got = kvq::float_to_fp16_rn(f);
    if (std::isnan(f)) {
      REQUIRE(((got & 0x7C00u) == 0x7C00u && (got & 0x3FFu) != 0));
    } else {
      INFO("float bits " << std::hex << u);
      REQUIRE(got == rb);
    }
    // bf16: nearest of the two neighbours by exact double distance, ties to even
    if (!std::isnan(f) && !std::isinf(f)) {
      const std::uint16_t lo = static_cast<std::uint16_t>(u >> 16);
      const std::uint16_t hi = static_cast<std::uint16_t>(lo + 1);
      const double dl = std::fabs(static_cast<double>(f) - oracle::bf16f(lo));
      // beyond the largest finite bf16 the next step is 2^128 (rounding to Inf)
      const double hv = (hi & 0x7F80u) == 0x7F80u ? std::copysign(std::ldexp(1.0, 128), f) : oracle::bf16f(hi);
      const double dh = std::fabs(hv - f);
      const std::uint16_t want = dl < dh ? lo : dh < dl ? hi : ((lo & 1) ? hi : lo);
      REQUIRE(kvq::float_to_bf16_rn(f) == want);
    }
  }
}

TEST_CASE("checked API: bad sizes throw naming the sizes and write nothing", "[block][api]") {
  std::vector<float> x(30, 1.0f);
  std::vector<std::uint8_t> codes(64, 0xAB), scales(8, 0xCD);
  const kb::nvfp4_te s{};
  try {
    kb::quantize(s, x.data(), 30, kb::tensor_value::computed(), codes.data(), codes.size(), scales.data(), scales.size());
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    CHECK(m.find("30") != std::string::npos);
    CHECK(m.find("16") != std::string::npos);
    CHECK(m.find("nvfp4_te") != std::string::npos);
  }
  x.resize(32);
  try {
    kb::quantize(s, x.data(), 32, kb::tensor_value::computed(), codes.data(), 15, scales.data(), scales.size());
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    CHECK(m.find("15") != std::string::npos);
    CHECK(m.find("16 needed") != std::string::npos);
  }
  try {
    kb::quantize(s, x.data(), 32, kb::tensor_value::computed(), codes.data(), codes.size(), scales.data(), 1);
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    const std::string m = e.what();
    CHECK(m.find("holds 1") != std::string::npos);
    CHECK(m.find("2 needed") != std::string::npos);
  }
  std::vector<float> zeros(1);
  std::vector<float> fsc(1);
  CHECK_THROWS_AS(kb::quantize(kb::kivi_int4{}, x.data(), 32, kb::tensor_value::computed(), codes.data(), codes.size(),
                               fsc.data(), fsc.size(), nullptr, 0),
                  std::invalid_argument);
  for (auto c : codes) CHECK(c == 0xAB);
  for (auto c : scales) CHECK(c == 0xCD);
  CHECK_THROWS_AS(kb::quantize_rows(s, x.data(), 2, 16 + 0 * 1 + 0, kb::tensor_value::computed(), codes.data(), 2,
                                    scales.data(), 2),
                  std::invalid_argument);
  try {
    kb::quantize_rows(kb::mxfp4_floor{}, x.data(), 1, 16, kb::tensor_value::computed(), codes.data(), codes.size(),
                      scales.data(), scales.size());
    FAIL("no exception");
  } catch (const std::invalid_argument& e) {
    CHECK(std::string(e.what()).find("1 x 16") != std::string::npos);
  }
  std::vector<float> out(16, -7.0f);
  CHECK_THROWS_AS(kb::dequantize(s, codes.data(), 7, scales.data(), 1, nullptr, 0, 1.0f, out.data(), 16),
                  std::invalid_argument);
  for (float v : out) CHECK(v == -7.0f);
  kb::quantized_tensor<kb::nvfp4_te> q;
  CHECK_THROWS_AS(q.assign(x.data(), 17), std::invalid_argument);
  CHECK(q.size() == 0);
  CHECK(q.memory_bytes() == 4u);
}

TEST_CASE("memory accounting equals the bytes held", "[block][api]") {
  const auto x = oracle::make_tensor(4096, 21, true, false, false);
  auto check = [&](auto s, std::size_t expect_bytes) {
    using S = decltype(s);
    kb::quantized_tensor<S> q(s);
    q.assign(x.data(), x.size());
    const std::size_t held = q.codes().size() * sizeof(std::uint8_t) +
                             q.scales().size() * sizeof(typename S::scale_type) + q.zeros().size() * sizeof(float) +
                             (S::tensor == kb::tensor_kind::none ? 0u : 4u);
    INFO(S::name);
    CHECK(q.memory_bytes() == held);
    CHECK(q.memory_bytes() == expect_bytes);
    CHECK(kb::sizes_of(s, x.size()).total_bytes() == expect_bytes);
  };
  check(kb::nvfp4_te{}, 2048 + 256 + 4);           // 4.5 bits/value + amax
  check(kb::nvfp4_torchao{}, 2048 + 256);          // no tensor value
  check(kb::mxfp4_floor{}, 2048 + 128);            // 4.25 bits/value
  check(kb::mxfp8_e4m3_rceil{}, 4096 + 128);
  check(kb::fp8_e4m3_per_tensor{}, 4096 + 4);
  check(kb::fp8_per_token_head{}, 4096 + 32 * 4);
  check(kb::kivi_int2{}, 1024 + 128 * 8);
  CHECK(kb::bits_per_value(kb::nvfp4_te{}) == 4.5);
  CHECK(kb::bits_per_value(kb::mxfp4_rceil{}) == 4.25);
  CHECK(kb::bits_per_value(kb::mxfp6_e3m2_floor{}) == 8.25);  // FP6 stored one byte each
}

namespace {
/// Sorted non-negative magnitudes of an element grid.
std::vector<double> grid(const oracle::fdesc& f) {
  std::vector<double> g;
  for (const auto& p : oracle::table(f)) g.push_back(p.first);
  return g;
}
/// |x - y| must not exceed half the gap of the grid cell holding |x|/s, when |x| is inside
/// the grid's range; y must be one of the cell's ends.
bool within_half_step(double x, double y, double s, const std::vector<double>& g, double rel_tol) {
  const double a = std::fabs(x) / s;
  if (a > g.back()) return true;  // saturation region: no half-step promise
  std::size_t i = 0;
  while (!(g[i] <= a && a <= g[i + 1])) ++i;
  const double gap = (g[i + 1] - g[i]) * s;
  return std::fabs(x - y) <= 0.5 * gap * (1.0 + rel_tol) + 1e-300;
}
}  // namespace

TEST_CASE("dequantize(quantize(x)) stays within half a step of the block grid", "[block][roundtrip]") {
  const auto x = oracle::make_tensor(8192, 31, true, true, false);
  SECTION("NVFP4 TE") {
    kb::quantized_tensor<kb::nvfp4_te> q;
    q.assign(x.data(), x.size());
    const auto y = q.dequantize();
    const auto g = grid(oracle::E2M1);
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double s = oracle::decode(oracle::E4M3, q.scales()[i / 16]) * q.tensor_value() / 2688.0;
      if (s == 0.0) continue;
      INFO(i);
      REQUIRE(within_half_step(x[i], y[i], s, g, 1e-5));
    }
  }
  SECTION("MX floor and round-up, every element format") {
    auto run = [&](auto s, const oracle::fdesc& f) {
      kb::quantized_tensor<decltype(s)> q(s);
      q.assign(x.data(), x.size());
      const auto y = q.dequantize();
      const auto g = grid(f);
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double sc = std::ldexp(1.0, q.scales()[i / 32] - 127);
        REQUIRE(within_half_step(x[i], y[i], sc, g, 0.0));
      }
    };
    run(kb::mxfp8_e4m3_floor{}, oracle::E4M3);
    run(kb::mxfp8_e5m2_rceil{}, oracle::E5M2);
    run(kb::mxfp6_e3m2_floor{}, oracle::E3M2);
    run(kb::mxfp6_e2m3_rceil{}, oracle::E2M3);
    run(kb::mxfp4_floor{}, oracle::E2M1);
    run(kb::mxfp4_rceil{}, oracle::E2M1);
  }
  SECTION("KIVI: within half a quantization step of the group grid") {
    kb::quantized_tensor<kb::kivi_int4> q;
    q.assign(x.data(), x.size());
    const auto y = q.dequantize();
    for (std::size_t i = 0; i < x.size(); ++i) {
      const double s = q.scales()[i / 32];
      REQUIRE(std::fabs(static_cast<double>(x[i]) - y[i]) <= 0.5 * s * (1.0 + 1e-5) + 1e-6 * std::fabs(x[i]));
    }
  }
}

TEST_CASE("documented bad-input behaviour", "[block][bad-input]") {
  SECTION("TE: all-zero tensor -> S_enc 1, scales and codes 0") {
    std::vector<float> z(64, 0.0f);
    kb::quantized_tensor<kb::nvfp4_te> q;
    q.assign(z.data(), z.size());
    CHECK(q.tensor_value() == 0.0f);
    for (auto s : q.scales()) CHECK(s == 0);
    for (auto c : q.codes()) CHECK(c == 0);
    for (float v : q.dequantize()) CHECK(v == 0.0f);
  }
  SECTION("TE vs vLLM: a block whose scale rounds to 0") {
    std::vector<float> x(32);
    for (int i = 0; i < 16; ++i) x[static_cast<std::size_t>(i)] = (i % 2 ? -1e-6f : 1e-6f);
    for (int i = 16; i < 32; ++i) x[static_cast<std::size_t>(i)] = 1000.0f;
    kb::quantized_tensor<kb::nvfp4_te> te;
    te.assign(x.data(), x.size());
    CHECK(te.scales()[0] == 0);
    for (int i = 0; i < 8; ++i) CHECK(te.codes()[static_cast<std::size_t>(i)] == 0xF7);  // +6 low, -6 high nibble
    kb::quantized_tensor<kb::nvfp4_vllm<>> vl;
    vl.assign(x.data(), x.size(), kb::tensor_value::given(1000.0f / 2688.0f));
    CHECK(vl.scales()[0] == 0);
    for (int i = 0; i < 8; ++i) CHECK(vl.codes()[static_cast<std::size_t>(i)] == 0x80);  // +0 low, -0 high nibble
  }
  SECTION("TE: Inf saturates the block scale; NaN never sets it") {
    std::vector<float> x(16, 1.0f);
    x[0] = std::numeric_limits<float>::infinity();
    x[1] = std::numeric_limits<float>::quiet_NaN();
    kb::quantized_tensor<kb::nvfp4_te> q;
    q.assign(x.data(), x.size());
    CHECK(q.tensor_value() == std::numeric_limits<float>::infinity());
    CHECK(q.scales()[0] == 0x7E);
    CHECK((q.codes()[0] & 0x0F) == 0x7);
    CHECK((q.codes()[0] >> 4) == 0x7);  // e2m1(NaN) = +6 as CUDA's conversion
  }
  SECTION("torchao: zero block keeps the 2^-6 scale floor") {
    std::vector<float> z(16, 0.0f);
    kb::quantized_tensor<kb::nvfp4_torchao> q;
    q.assign(z.data(), z.size());
    CHECK(q.scales()[0] == 0x08);
  }
  SECTION("MX: zero block, NaN block, Inf block") {
    std::vector<float> x(96, 0.0f);
    x[40] = std::numeric_limits<float>::quiet_NaN();
    x[41] = 2.0f;
    x[70] = std::numeric_limits<float>::infinity();
    x[71] = 2.0f;
    kb::quantized_tensor<kb::mxfp8_e4m3_floor> fl;
    fl.assign(x.data(), x.size());
    CHECK(fl.scales()[0] == 0);
    CHECK(fl.scales()[1] == 0xFF);
    CHECK(fl.scales()[2] == 0xFF);
    CHECK(fl.codes()[41] == 0x7F);  // every element of a NaN-scaled block is NaN
    kb::quantized_tensor<kb::mxfp8_e4m3_rceil> te;
    te.assign(x.data(), x.size());
    CHECK(te.scales()[1] == kvq::encode<kvq::fmt::ue8m0>(2.0f / 448.0f, kvq::rounding::up));
    CHECK(te.codes()[41] != 0x7F);
    CHECK(te.scales()[2] == 0xFE);
    CHECK(te.codes()[70] == 0x7F);  // exp2f_rcp(0xFE) = 0: Inf * 0 = NaN
    CHECK(te.codes()[71] == 0x00);  // and the rest of the block flushes to 0
  }
  SECTION("KIVI: constant group -> scale 0, codes 0, dequantizes to the constant") {
    std::vector<float> c(32, 2.5f);
    kb::quantized_tensor<kb::kivi_int2> q;
    q.assign(c.data(), c.size());
    CHECK(q.scales()[0] == 0.0f);
    CHECK(q.zeros()[0] == 2.5f);
    for (auto b : q.codes()) CHECK(b == 0);
    for (float v : q.dequantize()) CHECK(v == 2.5f);
  }
  SECTION("per-token-head: zero head gets the 1e-6 floor") {
    std::vector<float> z(128, 0.0f);
    kb::quantized_tensor<kb::int8_per_token_head> q;
    q.assign(z.data(), z.size());
    CHECK(q.scales()[0] == 1e-6f);
    for (auto b : q.codes()) CHECK(b == 0);
  }
  SECTION("int8 per-token-head truncates toward zero as Triton's cast") {
    std::vector<float> x(128, 0.0f);
    x[0] = 127.0f;  // scale 1
    x[1] = 2.9f;
    x[2] = -2.9f;
    kb::quantized_tensor<kb::int8_per_token_head> q;
    q.assign(x.data(), x.size());
    CHECK(q.codes()[1] == 2);
    CHECK(q.codes()[2] == static_cast<std::uint8_t>(-2));
  }
}

TEST_CASE("scheme descriptions", "[block][api]") {
  const kb::scheme_info te = kb::info_of(kb::nvfp4_te{});
  CHECK(std::string(te.name) == "nvfp4_te");
  CHECK(te.block_size == 16);
  CHECK(te.exact == kb::exactness::bit_exact);
  CHECK(kb::info_of(kb::nvfp4_vllm<>{}).exact == kb::exactness::needs_instruction_model);
  CHECK(kb::info_of(kb::mxfp4_rceil{}).bits_per_value == 4.25);
}

TEST_CASE("the branch-free e2m1 encoder and the bit decoders agree with the format core", "[block][fast]") {
  // every float whose top 24 bits vary (all exponents, signs, NaN/Inf) plus low-bit noise,
  // and every exact midpoint of the e2m1 grid with its neighbours
  for (std::uint32_t hi = 0; hi < (1u << 16); ++hi) {
    for (std::uint32_t lo : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0xFFFFu}) {
      const float f = oracle::ffrom((hi << 16) | lo);
      REQUIRE(kb::detail::e2m1_rn(f) == kvq::encode<kvq::fmt::e2m1>(f));
    }
  }
  for (float m : {0.25f, 0.75f, 1.25f, 1.75f, 2.5f, 3.5f, 5.0f, 6.0f})
    for (float f : {m, std::nextafter(m, 0.0f), std::nextafter(m, 100.0f), -m})
      REQUIRE(kb::detail::e2m1_rn(f) == kvq::encode<kvq::fmt::e2m1>(f));
  for (int c = 0; c < 256; ++c) {
    const float a = kb::detail::e4m3_value(static_cast<std::uint8_t>(c));
    const float b = kvq::decode<kvq::fmt::e4m3>(static_cast<std::uint8_t>(c));
    REQUIRE((std::isnan(a) ? std::isnan(b) : oracle::fbits(a) == oracle::fbits(b)));
    if (c < 16) {
      REQUIRE(oracle::fbits(kb::detail::e2m1_value(static_cast<std::uint8_t>(c))) ==
              oracle::fbits(kvq::decode<kvq::fmt::e2m1>(static_cast<std::uint8_t>(c))));
    }
  }
}

TEST_CASE("16-bit input overload selects bf16 or fp16 widening", "[block][api]") {
  std::vector<std::uint16_t> h(32);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<std::uint16_t>(0x3C00u + 37u * i);  // fp16 1.0 ...
  std::vector<float> as_fp16(32), as_bf16(32);
  for (std::size_t i = 0; i < h.size(); ++i) {
    _Float16 v;
    std::memcpy(&v, &h[i], 2);
    as_fp16[i] = static_cast<float>(v);
    as_bf16[i] = oracle::bf16f(h[i]);
  }
  std::vector<std::uint8_t> c1(16), c2(16), s1(1), s2(1);
  kb::quantize(kb::mxfp4_floor{}, h.data(), 32, kb::half_kind::fp16, kb::tensor_value::computed(), c1.data(), 16, s1.data(), 1);
  kb::quantize(kb::mxfp4_floor{}, as_fp16.data(), 32, kb::tensor_value::computed(), c2.data(), 16, s2.data(), 1);
  CHECK(c1 == c2);
  CHECK(s1 == s2);
  kb::quantize(kb::mxfp4_floor{}, h.data(), 32, kb::half_kind::bf16, kb::tensor_value::computed(), c1.data(), 16, s1.data(), 1);
  kb::quantize(kb::mxfp4_floor{}, as_bf16.data(), 32, kb::tensor_value::computed(), c2.data(), 16, s2.data(), 1);
  CHECK(c1 == c2);
  CHECK(s1 == s2);
}
