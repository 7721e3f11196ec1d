// One storage rule (kv::stored_bytes, kv/store.hpp): the bits and bytes of each scheme
// worked out by hand from the format definitions, and the registry, the stores and the
// planner agreeing with it for every registered scheme.
#include <catch2/catch.hpp>

#include <kvq/kv.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace {

namespace kv = kvq::kv;
using kv::kv_role;

std::vector<float> rows_of(std::size_t n, std::size_t d, std::uint32_t seed) {
  std::vector<float> x(n * d);
  std::uint32_t s = seed;
  for (auto& v : x) {
    s = s * 1664525u + 1013904223u;
    v = static_cast<float>(static_cast<int>(s >> 8) - (1 << 23)) * 0x1p-21f;
  }
  return x;
}

}  // namespace

TEST_CASE("bits per value from the format definitions", "[kv][bits]") {
  // KIVI (group 32): b-bit codes plus one scale and one zero point per 32 values, both in
  // the compute dtype: fp32 (32 bits) for kivi_int*, fp16 (16 bits) for kivi_int*_fp16.
  struct want {
    const char* name;
    std::size_t head_dim;
    double bits;
  };
  const want table[] = {
      {"kivi_int2", 128, 2 + (32.0 + 32.0) / 32},       // 4
      {"kivi_int4", 128, 4 + (32.0 + 32.0) / 32},       // 6
      {"kivi_int8", 128, 8 + (32.0 + 32.0) / 32},       // 10
      {"kivi_int2_fp16", 128, 2 + (16.0 + 16.0) / 32},  // 3
      {"kivi_int4_fp16", 128, 4 + (16.0 + 16.0) / 32},  // 5
      {"kivi_int8_fp16", 64, 8 + (16.0 + 16.0) / 32},   // 9
      {"bf16", 128, 16},
      {"fp16", 128, 16},
      {"fp32", 64, 32},
      {"fp8_e4m3", 128, 8},
      {"fp8_e4m3_cal", 128, 8},
      {"nvfp4_te", 128, 4 + 8.0 / 16},             // e2m1 + one ue4m3 byte per 16
      {"mxfp4_rceil", 64, 4 + 8.0 / 32},           // e2m1 + one ue8m0 byte per 32
      {"mxfp6_e2m3_floor", 128, 8 + 8.0 / 32},     // FP6 codes one per byte
      {"int8_per_token_head", 128, 8 + 32.0 / 128},  // one fp32 scale per row
      {"fp8_per_token_head", 96, (8.0 * 96 + 32) / 96},
  };
  for (const auto& w : table) {
    INFO(w.name << " head_dim " << w.head_dim);
    const kv::scheme& s = kv::find_scheme(w.name);
    CHECK(s.bits_per_value(w.head_dim) == w.bits);
    CHECK(kv::bits_per_value(*s.format, w.head_dim) == w.bits);
  }
}

TEST_CASE("KIVI bytes at a context, window included, by hand", "[kv][bits]") {
  // head_dim 128, 300 tokens, residual 128, group 32.
  // Keys: 256 tokens quantized (two windows): codes 256 * 128 * 4 / 8 = 16384 bytes;
  // 128 channels x 8 groups, a scale and a zero point each; 44 tokens at full precision.
  // Values: 172 oldest tokens quantized: codes 172 * 64 = 11008 bytes; 172 x 4 groups,
  // a scale and a zero point each; the last 128 tokens at full precision.
  const std::size_t d = 128, n = 300;
  struct want {
    const char* name;
    std::size_t width;  // bytes of a scale, a zero point and a full-precision value
  };
  for (const want w : {want{"kivi_int4", 4}, want{"kivi_int4_fp16", 2}}) {
    INFO(w.name);
    const kv::kv_format f = *kv::find_scheme(w.name).format;
    const std::size_t keys = 16384 + 2 * 128 * 8 * w.width + 44 * 128 * w.width;
    const std::size_t values = 11008 + 172 * 4 * 2 * w.width + 128 * 128 * w.width;
    CHECK(kv::stored_bytes(f, kv_role::key, d, n) == keys);
    CHECK(kv::stored_bytes(f, kv_role::value, d, n) == values);
    CHECK(kv::bits_per_value_at(f, d, n) == 8.0 * static_cast<double>(keys + values) / (2.0 * n * d));
  }
  CHECK(kv::stored_bytes(*kv::find_scheme("kivi_int4_fp16").format, kv_role::key, d, n) == 31744);
  CHECK(kv::stored_bytes(*kv::find_scheme("kivi_int4").format, kv_role::value, d, n) == 82048);
}

TEST_CASE("registry, stores and planner agree for every registered scheme", "[kv][bits]") {
  std::size_t checked = 0;
  for (const std::string& name : kv::scheme_names()) {
    const kv::scheme& s = kv::find_scheme(name);
    if (!s.format) continue;
    for (const std::size_t d : {std::size_t{64}, std::size_t{128}}) {
      INFO(name << " head_dim " << d);
      const kv::kv_format f = *s.format;
      const double bits = s.bits_per_value(d);
      CHECK(bits == kv::bits_per_value(f, d));
      const kv::model_shape m{"one head", 1, 1, d, false, "test"};
      // bytes_per_token: K and V of one head, all its scale overhead, window excluded.
      CHECK(kv::bytes_per_token(m, s) * 8.0 / (2.0 * static_cast<double>(d)) == bits);
      for (const std::size_t n : {std::size_t{1}, std::size_t{150}, std::size_t{300}}) {
        INFO(n << " tokens");
        std::size_t both = 0;
        for (const kv_role role : {kv_role::key, kv_role::value}) {
          std::unique_ptr<kv::row_store> st = kv::make_row_store(f, role, d, 1.0f);
          const std::vector<float> x = rows_of(n, d, static_cast<std::uint32_t>(n * 7 + d));
          st->append(x.data(), n);
          CHECK(st->memory_bytes() == kv::stored_bytes(f, role, d, n));
          both += st->memory_bytes();
        }
        const std::size_t tensor = kv::has_tensor_value(f) ? 2 * sizeof(float) : 0;
        CHECK(kv::kv_bytes(m, s, n) == both + tensor);
      }
      ++checked;
    }
  }
  CHECK(checked >= 2 * 30);
}

TEST_CASE("planner errors name the scheme as the user named it", "[kv][bits][errors]") {
  // A user scheme over the NVFP4 recipe: the error says my_nvfp4, not the recipe's name.
  kv::register_scheme(kv::make_scheme("my_nvfp4", "NVFP4 under another name", kvq::block::nvfp4_te{},
                                      kv::tensor_rule::from_amax));
  const kv::model_shape odd{"odd", 2, 2, 100, false, "test"};
  CHECK_THROWS_WITH(kv::kv_bytes(odd, kv::find_scheme("my_nvfp4"), 10),
                    Catch::Contains("head_dim 100 is not a multiple of my_nvfp4's block size 16"));
  CHECK_THROWS_WITH(kv::max_context(odd, kv::find_scheme("kivi_int4_fp16"), kv::find_scheme("kivi_int4_fp16"), 1u << 30),
                    Catch::Contains("kivi_int4_fp16's group size 32"));
  CHECK_THROWS_WITH(kv::find_scheme("my_nvfp4").bits_per_value(100), Catch::Contains("my_nvfp4's block size 16"));
}

TEST_CASE("KIVI's window dtype is the scheme's compute dtype", "[kv][bits]") {
  CHECK(*kv::kivi_window_dtype(*kv::find_scheme("kivi_int4").format) == kv::hp_format::fp32);
  CHECK(*kv::kivi_window_dtype(*kv::find_scheme("kivi_int2_fp16").format) == kv::hp_format::fp16);
  CHECK_FALSE(kv::kivi_window_dtype(*kv::find_scheme("nvfp4_te").format).has_value());
}
