// Prints one hash of every block recipe's outputs (codes, scales, zero points, tensor
// values, dequantized values) on fixed inputs. tests/block/CMakeLists.txt builds this
// source with -O0, -O3 and -O3 -march=native and runs each with both instruction sets of
// the bulk kernels (the argument: baseline or x86-64-v3, kvq/core/isa.hpp);
// compare_outputs.cmake requires every printout to be identical (no contraction, no
// fast-math, no vectoriser or instruction-set differences).
#include <cstdint>
#include <cstdio>
#include <exception>
#include <cstring>
#include <vector>

#include <kvq/block.hpp>

namespace kb = kvq::block;

namespace {
std::uint64_t h = 1469598103934665603ull;
void mix(const void* p, std::size_t n) {
  const unsigned char* c = static_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= c[i];
    h *= 1099511628211ull;
  }
}
std::uint32_t hash32(std::uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}
/// Integer-built inputs: uniform values, outliers, zero blocks, specials, denormals.
std::vector<float> inputs(std::size_t n, std::uint32_t seed) {
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint32_t r = hash32(static_cast<std::uint32_t>(i) * 2654435761u + seed);
    x[i] = (static_cast<float>(r & 0xFFFFFFu) * (1.0f / 16777216.0f) - 0.5f) * 4.0f;
    if (r % 97 == 0) x[i] *= 3000.0f;
  }
  for (std::size_t i = 64; i < 128 && i < n; ++i) x[i] = 0.0f;
  if (n > 300) {
    std::uint32_t nanb = 0x7FC00000u, den = 0x00012345u;
    std::memcpy(&x[200], &nanb, 4);
    x[230] = 1.0f / 0.0f;
    x[231] = -0.0f;
    for (std::size_t i = 256; i < 288; ++i) std::memcpy(&x[i], &den, 4), den += 977u;
  }
  return x;
}
template <class S>
void run(const S& s, kb::tensor_value tv) {
  for (std::uint32_t seed : {1u, 2u, 3u}) {
    const auto x = inputs(2048, seed);
    kb::quantized_tensor<S> q(s);
    q.assign(x.data(), x.size(), tv);
    mix(q.codes().data(), q.codes().size());
    mix(q.scales().data(), q.scales().size() * sizeof(typename S::scale_type));
    mix(q.zeros().data(), q.zeros().size() * sizeof(float));
    const float t = q.tensor_value();
    mix(&t, sizeof t);
    const auto y = q.dequantize();
    mix(y.data(), y.size() * sizeof(float));
  }
}
}  // namespace

int main(int argc, char** argv) {
  using namespace kvq::fmt;
  if (argc > 1) {
    try {
      const kvq::isa i = kvq::parse_isa(argv[1]);
      if (kvq::cpu_supports(i)) kvq::set_isa(i);
      else
        std::fprintf(stderr, "block_hash: %s does not run here; %s instead\n", argv[1],
                     kvq::isa_name(kvq::active_isa()));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "block_hash: %s\n", e.what());
      return 2;
    }
  }
  run(kb::nvfp4_te{}, kb::tensor_value::computed());
  run(kb::nvfp4_vllm<>{}, kb::tensor_value::given(0.013f));
  run(kb::nvfp4_vllm_4over6<kvq::instr::ieee_fma>{}, kb::tensor_value::given(0.013f));
  run(kb::nvfp4_vllm_4over6<kvq::instr::ieee>{}, kb::tensor_value::given(0.013f));
  run(kb::nvfp4_torchao{}, kb::tensor_value::computed());
  run(kb::nvfp4_torchao_two_level{}, kb::tensor_value::computed());
  run(kb::mx_floor<e4m3>{}, kb::tensor_value::computed());
  run(kb::mx_floor<e5m2>{}, kb::tensor_value::computed());
  run(kb::mx_floor<e3m2>{}, kb::tensor_value::computed());
  run(kb::mx_floor<e2m3>{}, kb::tensor_value::computed());
  run(kb::mx_floor<e2m1>{}, kb::tensor_value::computed());
  run(kb::mx_floor_microxcaling<e2m1>{}, kb::tensor_value::computed());
  run(kb::mx_rceil_te<e4m3>{}, kb::tensor_value::computed());
  run(kb::mx_rceil_te<e2m1>{}, kb::tensor_value::computed());
  run(kb::mx_rceil_torchao<e2m3>{}, kb::tensor_value::computed());
  run(kb::fp8_e4m3_per_tensor{}, kb::tensor_value::computed());
  run(kb::fp8_e5m2_per_tensor{}, kb::tensor_value::given(0.5f));
  run(kb::fp8_per_token_head{}, kb::tensor_value::computed());
  run(kb::int8_per_token_head{}, kb::tensor_value::computed());
  run(kb::kivi_int2{}, kb::tensor_value::computed());
  run(kb::kivi_int4{}, kb::tensor_value::computed());
  run(kb::kivi_int8{}, kb::tensor_value::computed());
  run(kb::kivi_group_fp16<4>{}, kb::tensor_value::computed());
  std::printf("%016llx\n", static_cast<unsigned long long>(h));
  return 0;
}
