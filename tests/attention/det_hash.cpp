// Prints content hashes of everything that must be bit-identical across builds:
// kvq::math, the RNG, the generators and injectors, RoPE, and every attention path.
// CMake builds this file with different optimisation flags (-O0, -O3, and -O3
// -march=native where available); the test kvq_attention_opt_levels requires identical
// output from all builds.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include <kvq/attention.hpp>
#include <kvq/core/math_array.hpp>
#include <kvq/inject.hpp>

namespace {

struct hasher {
  std::uint64_t h = 1469598103934665603ULL;
  void add(const void* p, std::size_t bytes) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t i = 0; i < bytes; ++i) h = (h ^ b[i]) * 1099511628211ULL;
  }
  template <class T>
  void add(T v) {
    add(&v, sizeof v);
  }
};

void print(const char* name, const hasher& h) { std::printf("%-28s %016llx\n", name, static_cast<unsigned long long>(h.h)); }

template <class Emu>
void attention_hash(const char* name, const kvq::attention::reference_attention& ref, const Emu& emu,
                    const kvq::matrix_f& Q, unsigned threads) {
  hasher h;
  kvq::attention::compare(ref, emu, Q, [&](const kvq::attention::query_result& r) {
    h.add(r.p_ref, r.tokens * sizeof(double));
    h.add(r.p_emu, r.tokens * sizeof(double));
    h.add(r.o_ref, r.head_dim * sizeof(double));
    h.add(r.o_emu, r.head_dim * sizeof(float));
  }, kvq::attention::run_options{threads, true});
  print(name, h);
}

}  // namespace

int main() {
  namespace km = kvq::math;
  {
    hasher h;
    for (std::uint64_t u = 0; u < 0x100000000ULL; u += 65521) {
      float x;
      const std::uint32_t b = static_cast<std::uint32_t>(u);
      std::memcpy(&x, &b, 4);
      h.add(km::exp(x));
      h.add(km::exp2(x));
      h.add(km::log(x));
      h.add(km::log2(x));
      float s, c;
      km::sincos(x, s, c);
      h.add(s);
      h.add(c);
    }
    print("math float", h);
  }
  {
    hasher h;
    for (std::uint64_t u = 0; u < 0x7ff0000000000000ULL; u += 0x0000321234567891ULL) {
      double x;
      std::memcpy(&x, &u, 8);
      h.add(km::exp(x) + km::exp(-x));
      h.add(km::exp2(x) + km::exp2(-x));
      h.add(km::log(x));
      h.add(km::log2(x));
    }
    for (int i = 0; i < 100000; ++i) {
      double s, c;
      km::sincos_turns(i * 1e-5, s, c);
      h.add(s);
      h.add(c);
    }
    print("math double", h);
  }
  {
    hasher h;
    const kvq::inject::counter_rng g{42, 7};
    for (std::uint64_t i = 0; i < 200000; ++i) {
      h.add(g.normal_float(i));
      h.add(g.uniform_double(i));
    }
    std::vector<double> z(100003);
    kvq::inject::normal_doubles(g, 77, z.size(), z.data());  // vector code: same bits on every build
    h.add(z.data(), z.size() * 8);
    print("rng", h);
  }
  kvq::inject::scenario_config c;
  c.shape.tokens = 3000;
  c.shape.head_dim = 64;
  c.shape.queries = 6;
  c.shape.kv_heads = 2;
  c.shape.q_per_kv = 2;
  c.shape.seed = 2024;
  c.shape.threads = 2;
  c.rope = kvq::inject::rope_config{500000.0};
  kvq::inject::channel_outlier_config oc;
  oc.random_count = 3;
  oc.gain = 200.0f;
  oc.stage = kvq::inject::rope_stage::pre_rope;
  c.outliers = oc;
  c.massive = kvq::inject::massive_activation_config{};
  kvq::inject::sink_config sk;
  sk.delta = 9.0;
  c.sinks = sk;
  c.needles = {{0, 1, 1500, 3, 2.0, true}, {3, 4, 2900, 2, 1.0, true}};
  const auto s = kvq::inject::build_scenario(c);
  {
    hasher h;
    for (const auto& m : s.data.q) h.add(m.data(), static_cast<std::size_t>(m.size()) * 4);
    for (const auto& m : s.data.k) h.add(m.data(), static_cast<std::size_t>(m.size()) * 4);
    for (const auto& m : s.data.v) h.add(m.data(), static_cast<std::size_t>(m.size()) * 4);
    for (const auto& hr : s.heads) {
      h.add(hr.sinks->gap[0].data(), hr.sinks->gap[0].size() * 8);
      for (const auto& e : hr.needles.entries) h.add(e.achieved_logit.data(), e.achieved_logit.size() * 8);
    }
    print("scenario", h);
  }
  using namespace kvq::attention;
  const matrix_f& K = s.data.k[0];
  const matrix_f& V = s.data.v[0];
  const matrix_f& Q = s.data.q[1];
  {
    // The batched weights (kvq/attention/weights_batch.hpp) and math::exp_n: vector code
    // whose shape depends on the instruction set, so exactly what must not change a bit.
    hasher h;
    const std::size_t n = static_cast<std::size_t>(K.rows()), d = static_cast<std::size_t>(K.cols());
    const std::size_t nq = static_cast<std::size_t>(Q.rows());
    const rows_view<float> kv{K.data(), n, d, d};
    std::vector<double> p(nq * n);
    std::vector<float> sc(nq * n);
    reference_weights_batch(Q.data(), d, nq, kv, p.data());
    h.add(p.data(), p.size() * 8);
    storage_weights_batch(Q.data(), d, nq, kv, 0.125f, sc.data(), p.data());
    h.add(p.data(), p.size() * 8);
    std::vector<double> x(100003);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = -700.0 + 1400.0 * static_cast<double>(i) / 100003.0;
    km::exp_n(x.data(), x.data(), x.size());
    h.add(x.data(), x.size() * 8);
    print("weights batch, exp_n", h);
  }
  reference_attention ref(K, V);
  for (unsigned threads : {1u, 3u}) {
    std::printf("threads %u\n", threads);
    storage_options so;
    so.codec = per_tensor_codec<kvq::fmt::e4m3>();
    attention_hash("storage e4m3 fp32", ref, storage_attention(K, V, so), Q, threads);
    so.bf16_math = true;
    so.hadamard = true;
    attention_hash("storage e4m3 bf16 hadamard", ref, storage_attention(K, V, so), Q, threads);
    so.codec = per_tensor_codec<kvq::fmt::e5m2>(1.0f, 1.0f, kvq::overflow::nosat);
    so.bf16_math = false;
    so.hadamard = false;
    attention_hash("storage e5m2 nosat guard", ref, storage_attention(K, V, so), Q, threads);
    fa3_options fo;
    attention_hash("fa3 e4m3 reverse", ref, fa3_fp8_attention<>(K, V, fo), Q, threads);
    fo.reverse = false;
    fo.block_n = 96;
    fo.hadamard = true;
    attention_hash("fa3 e4m3 forward hadamard", ref, fa3_fp8_attention<>(K, V, fo), Q, threads);
  }
  return 0;
}
