// The batched weights must be the per-query kernels' bits (reference_weights,
// storage_weights of kvq/attention/kernels.hpp, themselves checked against
// Boost.Multiprecision and the documented order in test_attention / test_attention_bias):
// contexts with ties, NaN and infinite scores, large negative logits (exp's scalar path),
// biases, every batch size and context length around the lane and block boundaries.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include <kvq/attention/weights_batch.hpp>

namespace {

bool same_bits(double a, double b) {
  std::uint64_t x, y;
  std::memcpy(&x, &a, 8);
  std::memcpy(&y, &b, 8);
  return x == y || (a != a && b != b);  // NaN payloads of sums are the hardware's
}

void check(std::mt19937& gen, std::size_t n, std::size_t d, std::size_t nq, int kind, bool with_bias) {
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> q(nq * (d + 2)), k(n * (d + 1)), bias(n);
  for (auto& v : q) v = nd(gen);
  for (auto& v : k) v = nd(gen);
  for (auto& v : bias) v = nd(gen) * 3.0f;
  if (kind == 1 && n > 3) {  // ties: repeated keys
    for (std::size_t t = 1; t < n; t += 3)
      for (std::size_t i = 0; i < d; ++i) k[t * (d + 1) + i] = k[i];
  }
  if (kind == 2 && n > 5) {  // a NaN and an infinite key element
    k[2 * (d + 1)] = std::numeric_limits<float>::quiet_NaN();
    k[5 * (d + 1) + 1] = std::numeric_limits<float>::infinity();
  }
  if (kind == 3) {  // logits far below the max: exp underflows (the scalar path)
    for (std::size_t t = 0; t < n; t += 2)
      for (std::size_t i = 0; i < d; ++i) k[t * (d + 1) + i] *= 3000.0f;
  }
  const kvq::attention::rows_view<float> K{k.data(), n, d, d + 1};
  const float* b = with_bias ? bias.data() : nullptr;
  std::vector<double> pb(nq * n), p1(n);
  std::vector<float> sb(nq * n), s1(n);
  std::unique_ptr<bool[]> bad_b(new bool[nq + 1]);
  bool* bad = bad_b.get();
  kvq::attention::reference_weights_batch(q.data(), d + 2, nq, K, pb.data(), bad, b);
  for (std::size_t v = 0; v < nq; ++v) {
    const bool nf = kvq::attention::reference_weights(q.data() + v * (d + 2), K, p1.data(), b);
    INFO("reference: n = " << n << ", d = " << d << ", query " << v << ", kind " << kind << ", bias " << with_bias);
    REQUIRE(nf == bad[v]);
    for (std::size_t t = 0; t < n; ++t) REQUIRE(same_bits(pb[v * n + t], p1[t]));
  }
  kvq::attention::storage_weights_batch(q.data(), d + 2, nq, K, 0.0883883f, sb.data(), pb.data(), bad, b);
  for (std::size_t v = 0; v < nq; ++v) {
    const bool nf = kvq::attention::storage_weights(q.data() + v * (d + 2), K, 0.0883883f, s1.data(), p1.data(), b);
    INFO("fp32: n = " << n << ", d = " << d << ", query " << v << ", kind " << kind << ", bias " << with_bias);
    REQUIRE(nf == bad[v]);
    for (std::size_t t = 0; t < n; ++t) REQUIRE(same_bits(pb[v * n + t], p1[t]));
  }
}

}  // namespace

TEST_CASE("batched reference and fp32 weights are the per-query kernels' bits", "[attention][quick]") {
  std::mt19937 gen(21);
  for (std::size_t n : {1, 2, 7, 8, 9, 63, 64, 65, 200, 1031}) {
    for (std::size_t d : {4, 8, 13, 64}) {
      for (int kind = 0; kind < 4; ++kind) {
        check(gen, n, d, 1, kind, false);
        check(gen, n, d, 3, kind, kind == 0);
      }
    }
  }
  check(gen, 4096 + 17, 128, 5, 0, false);
  check(gen, 4096 + 17, 128, 5, 1, true);
}
