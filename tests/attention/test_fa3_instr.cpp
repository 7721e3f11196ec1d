// FA3's softmax exp2 through a named hardware instruction model
// (kvq::instr::exp2_gpu_approx<Arch>, kvq/block/instr_registry.hpp): the attention
// variant accepts it as its Exp2 policy, an uncaptured model keeps the outputs within
// the softmax's rounding of the IEEE model, and a registered table is what the variant
// then evaluates (plumbing: registry -> policy -> fa3_query).
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <vector>

#include <kvq/attention.hpp>
#include <kvq/block/instr_registry.hpp>

using namespace kvq::attention;
namespace instr = kvq::instr;

namespace {
std::uint64_t mix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}
float uniform(std::uint64_t i) { return static_cast<float>(static_cast<double>(mix(i) >> 11) * 0x1p-53 * 4.0 - 2.0); }

/// exp2 with a fixed table view (what the registered model must evaluate).
struct exp2_with_view {
  const instr::table_view* t;
  float operator()(float x) const { return instr::ex2_approx_ftz(x, t); }
};
}  // namespace

TEST_CASE("FA3 softmax names the ex2.approx.ftz.f32 model", "[attention][fa3][instr][quick]") {
  const Eigen::Index n = 300, d = 64;
  matrix_f K(n, d), V(n, d);
  for (Eigen::Index i = 0; i < K.size(); ++i) {
    K.data()[i] = uniform(static_cast<std::uint64_t>(i));
    V.data()[i] = uniform(static_cast<std::uint64_t>(i) + 1000000);
  }
  std::vector<float> q(static_cast<std::size_t>(d));
  for (std::size_t j = 0; j < q.size(); ++j) q[j] = uniform(j + 5000000) * 3.0f;

  fa3_options fo;
  const fa3_fp8_attention<> ieee(K, V, fo);
  const fa3_fp8_attention<kvq::fmt::e4m3, instr::exp2_gpu_approx<instr::sm90>> approx(K, V, fo);
  workspace ws;
  std::vector<double> p0(static_cast<std::size_t>(n)), p1(p0.size()), p2(p0.size());
  std::vector<float> o0(static_cast<std::size_t>(d)), o1(o0.size()), o2(o0.size());
  ieee.run(q.data(), p0.data(), o0.data(), ws);
  approx.run(q.data(), p1.data(), o1.data(), ws);
  double worst = 0;
  for (std::size_t c = 0; c < o0.size(); ++c) worst = std::max(worst, std::fabs(double(o0[c]) - double(o1[c])));
  CHECK(worst < 1e-2);  // same softmax up to exp2 roundings and their FP8 cast of P

  // A table with +1 on every fraction: the variant must now follow it.
  std::vector<std::int32_t> c(1u << 23, 1);
  instr::instr_table t = instr::make_table(c.data(), 1u << 23, {{"model", "ex2_approx_ftz_f32_sm90"}, {"arch", "sm90"}});
  t.set("instruction", "ex2.approx.ftz.f32");
  instr::register_table(t);
  CHECK(instr::model_verified<instr::exp2_gpu_approx<instr::sm90>>());
  const instr::table_view v = t.view();
  const fa3_fp8_attention<kvq::fmt::e4m3, exp2_with_view> direct(K, V, fo, exp2_with_view{&v});
  approx.run(q.data(), p1.data(), o1.data(), ws);
  direct.run(q.data(), p2.data(), o2.data(), ws);
  instr::unregister_table("ex2_approx_ftz_f32_sm90");
  CHECK(p1 == p2);
  CHECK(o1 == o2);
  std::vector<double> p3(p0.size());
  std::vector<float> o3(o0.size());
  approx.run(q.data(), p3.data(), o3.data(), ws);  // uncaptured again
  CHECK(p3 != p1);
}
