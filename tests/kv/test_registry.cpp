// The scheme registry (kvq/kv/registry.hpp): one name per scheme, aliases resolve to it,
// every round trip is the KV store's, KIVI's window has KIVI's definition, recipe names
// are unique per type, and user schemes register and resolve.
#include <catch2/catch.hpp>

#include <kvq/kv.hpp>

#include <cstdint>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace {

using kvq::kv::kv_role;

std::vector<float> random_rows(std::size_t n, std::size_t d, std::uint32_t seed) {
  std::vector<float> x(n * d);
  std::uint32_t s = seed;
  for (auto& v : x) {
    s = s * 1664525u + 1013904223u;  // LCG: only needs to be varied, not good
    v = static_cast<float>(static_cast<int>(s >> 8) - (1 << 23)) * 0x1p-21f;
  }
  return x;
}

bool same_bits(const float* a, const float* b, std::size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

template <std::size_t... I>
std::vector<std::string> recipe_names(std::index_sequence<I...>) {
  std::vector<std::string> v;
  auto one = [&v](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (!std::is_same<T, kvq::kv::hp_format>::value) v.push_back(T::name);
  };
  (one(std::common_type<std::variant_alternative_t<I, kvq::kv::kv_format>>{}), ...);
  return v;
}

}  // namespace

TEST_CASE("every canonical name and alias resolves to exactly one scheme", "[registry][quick]") {
  const auto names = kvq::kv::scheme_names();
  REQUIRE(names.size() >= 30);
  std::set<std::string> seen;
  for (const auto& n : names) {
    INFO(n);
    CHECK(seen.insert(n).second);
    const auto& s = kvq::kv::find_scheme(n);
    CHECK(s.name == n);
    CHECK(!s.description.empty());
    for (const auto& a : s.aliases) {
      CHECK(seen.insert(a).second);
      CHECK(kvq::kv::canonical_name(a) == n);
    }
  }
  CHECK(kvq::kv::canonical_name("fp8_tokhead") == "fp8_per_token_head");
  CHECK(kvq::kv::canonical_name("mxfp8") == "mxfp8_e4m3_rceil");
  CHECK(kvq::kv::canonical_name("fp8_e4m3_per_tensor") == "fp8_e4m3_cal");
  CHECK_THROWS_WITH(kvq::kv::find_scheme("nvfp5"), Catch::Contains("unknown scheme 'nvfp5'") &&
                                                       Catch::Contains("nvfp4_te"));
}

TEST_CASE("recipe types have unique names, element format included", "[registry][quick]") {
  const auto v = recipe_names(std::make_index_sequence<std::variant_size<kvq::kv::kv_format>::value>{});
  const std::set<std::string> u(v.begin(), v.end());
  CHECK(u.size() == v.size());
  CHECK(std::string(kvq::block::mxfp8_e4m3_rceil::name) == "mxfp8_e4m3_rceil");
  CHECK(std::string(kvq::block::mx_rceil_torchao<kvq::fmt::e2m1>::name) == "mxfp4_rceil_torchao");
  CHECK(std::string(kvq::block::fp8_e5m2_per_tensor::name) != kvq::block::fp8_e4m3_per_tensor::name);
}

TEST_CASE("bits per value count codes, scales and zero points", "[registry][quick]") {
  // Worked out by hand: NVFP4 4 + 8/16, MXFP4 4 + 8/32, MXFP8 8 + 8/32, per-token-head
  // 8 + 32/d, KIVI INT4 4 + (32 + 32)/32 (fp32 scale and zero point per 32 values).
  CHECK(kvq::kv::find_scheme("bf16").bits_per_value(128) == 16.0);
  CHECK(kvq::kv::find_scheme("fp8_e4m3").bits_per_value(128) == 8.0);
  CHECK(kvq::kv::find_scheme("nvfp4_te").bits_per_value(128) == 4.5);
  CHECK(kvq::kv::find_scheme("mxfp4_rceil").bits_per_value(64) == 4.25);
  CHECK(kvq::kv::find_scheme("mxfp8").bits_per_value(128) == 8.25);
  CHECK(kvq::kv::find_scheme("fp8_per_token_head").bits_per_value(64) == 8.5);
  CHECK(kvq::kv::find_scheme("kivi_int4").bits_per_value(128) == 6.0);
}

TEST_CASE("block round trips equal the recipe's quantize and dequantize", "[registry][quick]") {
  namespace b = kvq::block;
  const std::size_t n = 40, d = 64;
  const auto x = random_rows(n, d, 7);
  std::vector<float> out(n * d), want(n * d);
  auto direct = [&](const auto& recipe, b::tensor_value tv) {
    b::quantized_tensor<std::decay_t<decltype(recipe)>> q(recipe);
    q.assign(x.data(), x.size(), tv);
    q.dequantize(want.data(), want.size());
  };
  kvq::kv::find_scheme("nvfp4_te").round_trip(kv_role::key, x.data(), out.data(), n, d);
  direct(b::nvfp4_te{}, b::tensor_value::computed());
  CHECK(same_bits(out.data(), want.data(), out.size()));
  kvq::kv::find_scheme("mxfp4_floor").round_trip(kv_role::value, x.data(), out.data(), n, d);
  direct(b::mxfp4_floor{}, b::tensor_value::computed());
  CHECK(same_bits(out.data(), want.data(), out.size()));
  // fp8_e4m3: k_scale = 1; fp8_e4m3_cal: amax * fp32(1/200) for keys, 1/100 for values.
  kvq::kv::find_scheme("fp8_e4m3").round_trip(kv_role::key, x.data(), out.data(), n, d);
  direct(b::fp8_e4m3_per_tensor{}, b::tensor_value::given(1.0f));
  CHECK(same_bits(out.data(), want.data(), out.size()));
  const float amax = b::tensor_amax(x.data(), x.size(), b::amax_nan::propagate);
  kvq::kv::find_scheme("fp8_e4m3_cal").round_trip(kv_role::value, x.data(), out.data(), n, d);
  direct(b::fp8_e4m3_per_tensor{}, b::tensor_value::given(amax * (1.0f / 100.0f)));
  CHECK(same_bits(out.data(), want.data(), out.size()));
}

TEST_CASE("KIVI keeps the last n mod 128 keys and the last 128 values at full precision", "[registry][quick]") {
  // KIVI models/llama_kivi.py (prefill): keys[:-(n % R)] are quantized, the rest kept;
  // values[:-R] are quantized, the last R kept (R = residual_length = 128).
  const std::size_t n = 1000, d = 32;
  const auto x = random_rows(n, d, 3);
  std::vector<float> k(n * d), v(n * d);
  const auto& s = kvq::kv::find_scheme("kivi_int4");
  s.round_trip(kv_role::key, x.data(), k.data(), n, d);
  s.round_trip(kv_role::value, x.data(), v.data(), n, d);
  auto exact_rows = [&](const std::vector<float>& y) {
    std::size_t tail = 0;
    for (std::size_t t = n; t-- > 0;) {
      if (!same_bits(&y[t * d], &x[t * d], d)) break;
      ++tail;
    }
    return tail;
  };
  CHECK(exact_rows(k) == 1000 % 128);  // 104
  CHECK(exact_rows(v) == 128);
}

TEST_CASE("user schemes register once and resolve by name", "[registry][quick]") {
  auto halve = [](kv_role, const float* in, float* out, std::size_t n, std::size_t d) {
    for (std::size_t i = 0; i < n * d; ++i) out[i] = kvq::round_bf16(in[i] * 0.5f) * 2.0f;
  };
  kvq::kv::register_scheme(kvq::kv::make_scheme("test_bf16_halved", "bf16 of x/2, times 2",
                                                [](std::size_t) { return 16.0; }, halve));
  const auto& s = kvq::kv::find_scheme("test_bf16_halved");
  CHECK(s.bits_per_value(128) == 16.0);
  CHECK(!s.format);
  float in[2] = {3.0f, 1.0f + 0x1p-9f}, out[2];
  s.round_trip(kv_role::key, in, out, 1, 2);
  CHECK(out[0] == 3.0f);
  CHECK(out[1] == 1.0f);
  CHECK_THROWS_WITH(kvq::kv::register_scheme(kvq::kv::make_scheme("test_bf16_halved", "again",
                                                                  [](std::size_t) { return 1.0; }, halve)),
                    Catch::Contains("already taken"));
  CHECK_THROWS_WITH(kvq::kv::register_scheme(kvq::kv::make_scheme("nvfp4_te", "clash",
                                                                  [](std::size_t) { return 1.0; }, halve)),
                    Catch::Contains("already taken"));
  CHECK_THROWS_WITH(kvq::kv::format_of(s), Catch::Contains("without a kvq storage format"));
  CHECK_THROWS_WITH(kvq::kv::uniform_policy(s), Catch::Contains("without a kvq storage format"));
}

TEST_CASE("every built-in scheme's round trip is one store's: every row appended at once, then dequantized",
          "[registry][quick]") {
  // The round trip takes formats with independent rows a chunk of rows at a time; the
  // oracle here is the store itself holding the whole tensor. 700 rows: two whole chunks
  // and a partial one; rows far apart in magnitude so that the tensor value matters.
  const std::size_t n = 700, d = 64;
  auto x = random_rows(n, d, 11);
  for (std::size_t t = 0; t < n; t += 97)
    for (std::size_t j = 0; j < d; ++j) x[t * d + j] *= 300.0f;
  std::vector<float> out(n * d), want(n * d);
  std::size_t checked = 0;
  for (const std::string& name : kvq::kv::scheme_names()) {
    const kvq::kv::scheme& s = kvq::kv::find_scheme(name);
    if (s.name != name || !s.format) continue;  // aliases; user schemes have no format
    for (kv_role role : {kv_role::key, kv_role::value}) {
      INFO(name << (role == kv_role::key ? " keys" : " values"));
      float tv = 1.0f;
      if (kvq::kv::has_tensor_value(*s.format) && s.rule != kvq::kv::tensor_rule::unit)
        tv = kvq::kv::detail::rule_tensor_value(
            *s.format, s.rule,
            kvq::block::tensor_amax(x.data(), x.size(), kvq::kv::tensor_amax_rule(*s.format)), role);
      auto st = kvq::kv::make_row_store(*s.format, role, d, tv);
      st->append(x.data(), n);
      st->dequantize(want.data());
      std::fill(out.begin(), out.end(), -1.0f);
      s.round_trip(role, x.data(), out.data(), n, d);
      REQUIRE(same_bits(out.data(), want.data(), out.size()));
      // round_trip_rows: the same rows, and each range final when announced (compared
      // then), the ranges consecutive from row 0 to the last.
      std::fill(out.begin(), out.end(), -1.0f);
      std::size_t next = 0, ranges = 0;
      kvq::kv::round_trip_rows(s, role, x.data(), out.data(), n, d, [&](std::size_t first, std::size_t count) {
        REQUIRE(first == next);
        REQUIRE(count > 0);
        REQUIRE(same_bits(out.data() + first * d, want.data() + first * d, count * d));
        next = first + count;
        ++ranges;
      });
      CHECK(next == n);
      CHECK(same_bits(out.data(), want.data(), out.size()));
      // One range per 256 rows where rows are independent; KIVI's store takes them all.
      CHECK(ranges == (s.grouping(kv_role::key) == kvq::kv::scale_grouping::channel ? 1u : 3u));
      CHECK(kvq::kv::rows_independent(*s.format) == (ranges == 3u));
      ++checked;
    }
  }
  CHECK(checked >= 40);
}

TEST_CASE("round_trip_rows serves a user scheme with one range after its round trip", "[registry][quick]") {
  auto scale = [](kv_role, const float* in, float* out, std::size_t n, std::size_t d) {
    for (std::size_t i = 0; i < n * d; ++i) out[i] = in[i] * 4.0f;
  };
  const kvq::kv::scheme s =
      kvq::kv::make_scheme("test_times_four", "x times 4", [](std::size_t) { return 32.0; }, scale);
  CHECK(!s.round_trip_in_rows);
  const std::vector<float> in = {1, 2, 3, 4, 5, 6};
  std::vector<float> out(6, 0.0f);
  std::vector<std::pair<std::size_t, std::size_t>> seen;
  kvq::kv::round_trip_rows(s, kv_role::value, in.data(), out.data(), 3, 2, [&](std::size_t first, std::size_t count) {
    seen.emplace_back(first, count);
    CHECK(out[5] == 24.0f);  // written before the call
  });
  REQUIRE(seen.size() == 1);
  CHECK(seen[0] == std::make_pair(std::size_t{0}, std::size_t{3}));
  kvq::kv::round_trip_rows(s, kv_role::value, in.data(), out.data(), 0, 2, [&](std::size_t, std::size_t) {
    FAIL("no rows, no range");
  });
}
