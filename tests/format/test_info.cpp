// kvq::describe / all_format_infos / format_table_markdown (info.hpp): the printed
// formats table must state the numbers and edge-case codes of the test oracle.
#include <catch2/catch.hpp>

#include <cstdio>
#include <limits>
#include <string>

#include <kvq/format.hpp>

#include "formats_under_test.hpp"

using namespace kvqtest;

namespace {

std::string code_hex(unsigned c) {
  char b[8];
  std::snprintf(b, sizeof b, "0x%02X", c & 0xFFu);
  return b;
}

bool starts_with_code(const std::string& s, unsigned c) { return s.rfind(code_hex(c), 0) == 0; }
bool contains_code(const std::string& s, unsigned c) { return s.find(code_hex(c)) != std::string::npos; }

}  // namespace

TEST_CASE("format infos state the oracle's numbers and edge codes", "[info]") {
  for_each_format([](auto f) {
    using F = decltype(f);
    const layout& L = ref<F>::L;
    const table T(L);
    const kvq::format_info i = kvq::describe<F>();
    const float inf = std::numeric_limits<float>::infinity();
    INFO(L.name);
    CHECK(std::string(i.name) == L.name);
    CHECK(i.sign_bits == (L.is_signed ? 1 : 0));
    CHECK(i.exponent_bits == L.ebits);
    CHECK(i.mantissa_bits == L.mbits);
    CHECK(i.bias == L.bias);
    CHECK(i.max_finite == T.v.back());
    CHECK(i.min_subnormal == (T.v[0] == 0.0 ? T.v[1] : T.v[0]));
    CHECK(i.min_normal == ref_decode(L, L.subnormals ? (1u << L.mbits) : 0u));
    CHECK(starts_with_code(i.nan_float, T.nan_for_float()));
    const double neg_nan = -std::numeric_limits<double>::quiet_NaN();
    CHECK(contains_code(i.nan_double, T.encode(neg_nan, rmode::nearest_even, ovf::satfinite)));
    CHECK(contains_code(i.inf_sat, T.encode(-inf, rmode::nearest_even, ovf::satfinite)));
    CHECK(contains_code(i.inf_nosat, T.encode(-inf, rmode::nearest_even, ovf::nosat)));
    CHECK(starts_with_code(i.overflow_nosat, T.encode(3.0e38f, rmode::nearest_even, ovf::nosat)));
    CHECK(starts_with_code(i.neg_zero, T.encode(-0.0f, rmode::nearest_even, ovf::satfinite)));
  });
}

TEST_CASE("the markdown formats table has a row per format", "[info]") {
  const std::string md = kvq::format_table_markdown();
  std::size_t lines = 0;
  for (char c : md) lines += c == '\n' ? 1u : 0u;
  CHECK(lines == 2 + kvq::all_format_infos().size());
  for (const auto& i : kvq::all_format_infos()) CHECK(md.find(std::string("| ") + i.name + " |") != std::string::npos);
}
