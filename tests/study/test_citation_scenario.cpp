// kvq/study/citation_scenario.hpp's per-length seeds: the scenario's draws are
// counter-based (keyed by the seed and the token index), so two lengths built from one
// seed share their first keys; lab::context_seed must give every length its own keys.
// The oracle is the scenario itself: with the shared seed the 1024-token context's first
// keys equal the 512-token one's bit for bit (shown below), with context_seed they do not.
#include <catch2/catch.hpp>

#include <cstdint>
#include <set>

#include <kvq/inject/scenario.hpp>
#include <kvq/study/citation_scenario.hpp>

namespace {
// The number of rows among the first `rows` that are equal in both key matrices.
std::size_t equal_rows(const kvq::matrix_f& a, const kvq::matrix_f& b, std::size_t rows) {
  std::size_t eq = 0;
  for (std::size_t r = 0; r < rows; ++r) {
    bool same = true;
    for (Eigen::Index c = 0; c < a.cols(); ++c)
      if (a(static_cast<Eigen::Index>(r), c) != b(static_cast<Eigen::Index>(r), c)) same = false;
    eq += same;
  }
  return eq;
}
kvq::matrix_f keys(std::size_t n, std::uint64_t seed) {
  const auto sc = kvq::study::lab::citation_scenario(n, 4, 32, seed, 10.0, 8.0, 4, -0.5, 1.5, 0);
  return kvq::inject::build_scenario(sc).data.k[0];
}
}  // namespace

TEST_CASE("context_seed gives every context length its own keys") {
  // The shared seed (the seed rule before the per-length streams): most of the first 512
  // keys of the 1024-token context are the 512-token context's (the spans sit at other
  // positions, so a few rows differ).
  const std::uint64_t shared = 1 * 1000003ull + 0;
  CHECK(equal_rows(keys(512, shared), keys(1024, shared), 512) > 400);
  // Per-length seeds: no key row in common.
  using kvq::study::lab::context_seed;
  CHECK(equal_rows(keys(512, context_seed(1, 0, 512)), keys(1024, context_seed(1, 0, 1024)), 512) == 0);
  // Distinct (seed, index, length) give distinct seeds (the mixer is a bijection; a
  // collision here would mean a broken mixer).
  std::set<std::uint64_t> seen;
  for (std::uint64_t s = 0; s < 4; ++s)
    for (std::uint64_t i = 0; i < 16; ++i)
      for (std::uint64_t n : {4096ull, 16384ull, 32768ull, 65536ull, 131072ull}) seen.insert(context_seed(s, i, n));
  CHECK(seen.size() == 4u * 16u * 5u);
  // splitmix64's published first output for state 0 (Vigna's splitmix64.c: the state is
  // advanced by the golden gamma before mixing): 0xE220A8397B1DCDAF.
  CHECK(kvq::study::lab::mix_seed(0) == 0xE220A8397B1DCDAFull);
}
