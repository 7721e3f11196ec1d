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

// storage_query_batch / reference_query_batch against storage_query / reference_query
// query by query, each on its own prefix of the rows: fp32 and bf16 math, the same four kinds of context as above, biases, and
// prefixes of 1 key, odd and even counts and the whole context.
TEST_CASE("batched queries are storage_query's (fp32, bf16) and reference_query's bits on each prefix",
          "[attention][quick]") {
  std::mt19937 gen(23);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (std::size_t n : {1, 2, 9, 64, 65, 301}) {
    for (std::size_t d : {5, 16}) {
      for (int kind = 0; kind < 4; ++kind) {
        const std::size_t nq = 6;
        std::vector<float> q(nq * (d + 2)), k(n * (d + 1)), v(n * (d + 3)), bias(n);
        for (auto& x : q) x = nd(gen);
        for (auto& x : k) x = nd(gen);
        for (auto& x : v) x = nd(gen);
        for (auto& x : bias) x = nd(gen);
        if (kind == 1 && n > 3)
          for (std::size_t t = 1; t < n; t += 3)
            for (std::size_t i = 0; i < d; ++i) k[t * (d + 1) + i] = k[i];
        if (kind == 2 && n > 5) {
          k[2 * (d + 1)] = std::numeric_limits<float>::quiet_NaN();
          v[4 * (d + 3) + 1] = std::numeric_limits<float>::infinity();
        }
        if (kind == 3)
          for (std::size_t t = 0; t < n; t += 2)
            for (std::size_t i = 0; i < d; ++i) k[t * (d + 1) + i] *= 3000.0f;
        std::vector<std::size_t> keys(nq);
        for (std::size_t i = 0; i < nq; ++i) keys[i] = i == 0 ? n : 1 + (i * 7919) % n;
        const kvq::attention::rows_view<float> K{k.data(), n, d, d + 1}, V{v.data(), n, d, d + 3};
        for (bool bf16 : {false, true}) {
          for (bool with_bias : {false, true}) {
            const float* b = with_bias ? bias.data() : nullptr;
            std::vector<double> pb(nq * n);
            std::vector<float> ob(nq * d), s(nq * n), acc(nq * kvq::attention::pv_scratch(n, d)), tmp(d), Z(nq);
            std::vector<kvq::attention::query_status> st(nq);
            if (!bf16) {  // the reference path on the same context
              std::vector<double> pr(nq * n), orf(nq * d), sr(nq * n), accr(nq * kvq::attention::pv_scratch(n, d)),
                  tmpr(d);
              kvq::attention::reference_query_batch(q.data(), d + 2, nq, keys.data(), K, V, pr.data(), n, orf.data(), d,
                                                    st.data(), sr.data(), accr.data(), tmpr.data(), b);
              for (std::size_t i = 0; i < nq; ++i) {
                const std::size_t m = keys[i];
                std::vector<double> p1(m), o1(d), acc1(kvq::attention::pv_scratch(m, d)), tmp1(d);
                const kvq::attention::rows_view<float> Km{k.data(), m, d, d + 1}, Vm{v.data(), m, d, d + 3};
                const auto st1 = kvq::attention::reference_query(q.data() + i * (d + 2), Km, Vm, p1.data(), o1.data(),
                                                                 acc1.data(), tmp1.data(), b);
                INFO("reference: n " << n << ", d " << d << ", kind " << kind << ", bias " << with_bias << ", query "
                                     << i << ", keys " << m);
                REQUIRE(st1.nonfinite_scores == st[i].nonfinite_scores);
                REQUIRE(st1.nonfinite_output == st[i].nonfinite_output);
                for (std::size_t t = 0; t < m; ++t) REQUIRE(same_bits(pr[i * n + t], p1[t]));
                for (std::size_t c = 0; c < d; ++c) REQUIRE(same_bits(orf[i * d + c], o1[c]));
              }
            }
            kvq::attention::storage_query_batch(q.data(), d + 2, nq, keys.data(), K, V, 0.25f, bf16, pb.data(), n,
                                                ob.data(), d, st.data(), s.data(), acc.data(), tmp.data(), Z.data(), b);
            for (std::size_t i = 0; i < nq; ++i) {
              const std::size_t m = keys[i];
              std::vector<double> p1(m);
              std::vector<float> o1(d), s1(m), acc1(kvq::attention::pv_scratch(m, d)), tmp1(d);
              const kvq::attention::rows_view<float> Km{k.data(), m, d, d + 1}, Vm{v.data(), m, d, d + 3};
              const auto st1 = kvq::attention::storage_query(q.data() + i * (d + 2), Km, Vm, 0.25f, bf16, p1.data(),
                                                             o1.data(), s1.data(), acc1.data(), tmp1.data(), b);
              INFO("n " << n << ", d " << d << ", kind " << kind << ", bf16 " << bf16 << ", bias " << with_bias
                        << ", query " << i << ", keys " << m);
              REQUIRE(st1.nonfinite_scores == st[i].nonfinite_scores);
              REQUIRE(st1.nonfinite_output == st[i].nonfinite_output);
              for (std::size_t t = 0; t < m; ++t) REQUIRE(same_bits(pb[i * n + t], p1[t]));
              for (std::size_t c = 0; c < d; ++c) REQUIRE(same_bits(ob[i * d + c], o1[c]));
            }
          }
        }
      }
    }
  }
}
