// kvq/attention/fa3_path.hpp: the path names parse to what they say and back, every other
// text is refused, and apply_fa3_path sets the options the accumulation model reads.
#include <catch2/catch.hpp>

#include <string>

#include <kvq/attention/fa3_path.hpp>

using namespace kvq::attention;

TEST_CASE("fa3 path names round-trip") {
  for (const std::string& n : fa3_path_names()) {
    fa3_path p;
    REQUIRE(parse_fa3_path(n, p));
    CHECK(fa3_path_name(p) == n);
  }
  fa3_path p;
  REQUIRE(parse_fa3_path("ideal_fp32", p));
  CHECK((!p.tensor_core && p.promote == 0));
  REQUIRE(parse_fa3_path("sm90", p));
  CHECK((p.tensor_core && p.promote == 0));
  REQUIRE(parse_fa3_path("sm90_promote_1000000", p));
  CHECK((p.tensor_core && p.promote == 1000000));
  REQUIRE(parse_fa3_path("sm90_promote_37", p));
  CHECK(p.promote == 37);
}

TEST_CASE("fa3 path: anything else is refused and leaves the path unchanged") {
  for (const char* bad : {"", "sm90_promote_", "sm90_promote_0", "sm90_promote_04", "sm90_promote_-1",
                          "sm90_promote_1000001", "sm90_promote_99999999", "sm90_promote_4x", "SM90", "sm89",
                          "ideal", "ideal_fp32 ", " sm90"}) {
    fa3_path p{true, 7};
    CHECK_FALSE(parse_fa3_path(bad, p));
    CHECK((p.tensor_core && p.promote == 7));
  }
}

TEST_CASE("apply_fa3_path sets the accumulation options") {
  fa3_options o;
  o.block_n = 160;
  apply_fa3_path({true, 4}, o);
  CHECK(o.accumulation == fa3_accumulation::tensor_core);
  CHECK(o.mma_arch == kvq::mma::arch::sm_90);
  CHECK(o.pv_promote_every == 4);
  CHECK(o.qk_promote_every == 0);
  CHECK(o.block_n == 160);
  apply_fa3_path({false, 0}, o);
  CHECK(o.accumulation == fa3_accumulation::ideal_fp32);
  CHECK(o.pv_promote_every == 0);
}
