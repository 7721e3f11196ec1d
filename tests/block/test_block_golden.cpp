// Golden vectors: every recipe against the independent plain implementation in
// block_oracle.hpp, over random tensors with outliers, zero blocks, NaN/Inf/-0,
// denormals and extreme ranges. Zero mismatches in codes, scales, zero points and the
// tensor value.
#include <catch2/catch.hpp>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include <kvq/block.hpp>

#include "block_oracle.hpp"

namespace kb = kvq::block;

namespace {

int unpack(const std::vector<std::uint8_t>& buf, std::size_t i, int bits) {
  if (bits == 8) return buf[i];
  if (bits == 4) return (buf[i / 2] >> (4 * (i % 2))) & 0xF;
  return (buf[i / 4] >> (2 * (i % 4))) & 0x3;
}

template <class S>
oracle::result run_lib(const S& s, const std::vector<float>& x, kb::tensor_value tv) {
  const kb::buffer_sizes z = kb::sizes_of(s, x.size());
  std::vector<std::uint8_t> codes(z.code_bytes, 0xAB);
  std::vector<typename S::scale_type> sc(z.scales);
  std::vector<float> zr(z.zeros);
  oracle::result r;
  r.tensor = kb::quantize(s, x.data(), x.size(), tv, codes.data(), codes.size(), sc.data(), sc.size(), zr.data(),
                          zr.size());
  for (std::size_t i = 0; i < x.size(); ++i) r.codes.push_back(unpack(codes, i, S::storage_bits));
  for (const auto& v : sc) {
    if constexpr (std::is_same<typename S::scale_type, std::uint8_t>::value) r.scale_codes.push_back(v);
    else r.scale_values.push_back(v);
  }
  r.zeros = zr;
  return r;
}

bool same_bits(float a, float b) { return oracle::fbits(a) == oracle::fbits(b); }

std::string compare(const oracle::result& lib, const oracle::result& ref) {
  std::ostringstream os;
  std::size_t bad = 0;
  if (lib.codes.size() != ref.codes.size()) os << "code count " << lib.codes.size() << " vs " << ref.codes.size() << "; ";
  for (std::size_t i = 0; i < std::min(lib.codes.size(), ref.codes.size()); ++i)
    if (lib.codes[i] != ref.codes[i] && bad++ < 3) os << "code[" << i << "] " << lib.codes[i] << " vs " << ref.codes[i] << "; ";
  if (lib.scale_codes != ref.scale_codes) {
    ++bad;
    for (std::size_t i = 0; i < std::min(lib.scale_codes.size(), ref.scale_codes.size()); ++i)
      if (lib.scale_codes[i] != ref.scale_codes[i]) {
        os << "scale[" << i << "] " << lib.scale_codes[i] << " vs " << ref.scale_codes[i] << "; ";
        break;
      }
    if (lib.scale_codes.size() != ref.scale_codes.size()) os << "scale count differs; ";
  }
  if (lib.scale_values.size() != ref.scale_values.size()) {
    ++bad;
    os << "fp32 scale count differs; ";
  } else {
    for (std::size_t i = 0; i < lib.scale_values.size(); ++i)
      if (!same_bits(lib.scale_values[i], ref.scale_values[i])) {
        ++bad;
        os << "fp32 scale[" << i << "] " << lib.scale_values[i] << " vs " << ref.scale_values[i] << "; ";
        break;
      }
  }
  if (lib.zeros.size() != ref.zeros.size()) {
    ++bad;
    os << "zero count differs; ";
  } else {
    for (std::size_t i = 0; i < lib.zeros.size(); ++i)
      if (!same_bits(lib.zeros[i], ref.zeros[i])) {
        ++bad;
        os << "zero[" << i << "] differs; ";
        break;
      }
  }
  if (!same_bits(lib.tensor, ref.tensor)) {
    ++bad;
    os << "tensor " << lib.tensor << " vs " << ref.tensor << "; ";
  }
  return bad ? os.str() : std::string();
}

struct named_tensor {
  std::string name;
  std::vector<float> x;
};

std::vector<named_tensor> tensors() {
  std::vector<named_tensor> t;
  t.push_back({"gaussian", oracle::make_tensor(4096, 1, false, false, false)});
  t.push_back({"outliers", oracle::make_tensor(4096, 2, true, false, false)});
  t.push_back({"outliers+zero blocks", oracle::make_tensor(4096, 3, true, true, false)});
  t.push_back({"zero blocks of 32", oracle::make_tensor(4096, 4, false, true, false, 32)});
  t.push_back({"specials", oracle::make_tensor(4096, 5, true, true, true)});
  t.push_back({"all zero", std::vector<float>(512, 0.0f)});
  {
    std::vector<float> d(512);
    for (std::size_t i = 0; i < d.size(); ++i)
      d[i] = oracle::ffrom(static_cast<std::uint32_t>((i * 2654435761u) & 0x007FFFFFu)) * (i % 3 ? 1.0f : -1.0f);
    t.push_back({"denormals", d});
  }
  {
    auto a = oracle::make_tensor(512, 6, false, false, false);
    for (std::size_t i = 0; i < 256; ++i) a[i] *= 1e-6f;
    for (std::size_t i = 256; i < 512; ++i) a[i] *= 1000.0f;
    t.push_back({"tiny next to huge", a});
  }
  {
    auto a = oracle::make_tensor(1024, 7, true, false, false);
    for (auto& v : a) v *= 1e30f;
    t.push_back({"x1e30", a});
    auto c = oracle::make_tensor(1024, 8, true, false, false);
    for (auto& v : c) v *= 1e-30f;
    t.push_back({"x1e-30", c});
  }
  {
    std::vector<float> e(512, 3.0f);  // constant: KIVI zero range, exact ties in the grids
    for (std::size_t i = 0; i < e.size(); i += 2) e[i] = 0.25f * static_cast<float>(i % 32);
    t.push_back({"grid points and ties", e});
  }
  return t;
}

template <class S, class Ref>
void check_recipe(const S& s, kb::tensor_value tv, Ref ref, const char* label) {
  for (const auto& t : tensors()) {
    if (t.x.size() % s.block_size() != 0) continue;
    const oracle::result lib = run_lib(s, t.x, tv);
    const oracle::result want = ref(t.x);
    const std::string diff = compare(lib, want);
    INFO(label << " on " << t.name << ": " << diff);
    CHECK(diff.empty());
  }
}

}  // namespace

TEST_CASE("NVFP4 TransformerEngine recipe matches the reference", "[block][golden]") {
  check_recipe(kb::nvfp4_te{}, kb::tensor_value::computed(), [](const std::vector<float>& x) { return oracle::te_nvfp4(x); },
               "nvfp4_te");
  kb::nvfp4_te s;
  s.inverse = kb::nvfp4_te::inverse_rule::enc_div_scale;
  check_recipe(s, kb::tensor_value::computed(), [](const std::vector<float>& x) { return oracle::te_nvfp4(x, true); },
               "nvfp4_te enc_div_scale");
}

TEST_CASE("NVFP4 vLLM KV store (IEEE instruction model) matches the reference", "[block][golden]") {
  for (float k : {1.0f, 0.01f, 0.0021f, 3.5f}) {
    check_recipe(kb::nvfp4_vllm<kvq::instr::ieee>{}, kb::tensor_value::given(k),
                 [k](const std::vector<float>& x) { return oracle::vllm_nvfp4(x, k, false, false); }, "nvfp4_vllm");
    check_recipe(kb::nvfp4_vllm_4over6<kvq::instr::ieee>{}, kb::tensor_value::given(k),
                 [k](const std::vector<float>& x) { return oracle::vllm_nvfp4(x, k, true, false); },
                 "nvfp4_vllm_4over6 unfused");
    check_recipe(kb::nvfp4_vllm_4over6<kvq::instr::ieee_fma>{}, kb::tensor_value::given(k),
                 [k](const std::vector<float>& x) { return oracle::vllm_nvfp4(x, k, true, true); },
                 "nvfp4_vllm_4over6 fused");
  }
}

TEST_CASE("NVFP4 torchao recipes match the reference", "[block][golden]") {
  check_recipe(kb::nvfp4_torchao{}, kb::tensor_value::computed(),
               [](const std::vector<float>& x) { return oracle::torchao_nvfp4(x, false); }, "nvfp4_torchao");
  check_recipe(kb::nvfp4_torchao_two_level{}, kb::tensor_value::computed(),
               [](const std::vector<float>& x) { return oracle::torchao_nvfp4(x, true); }, "nvfp4_torchao_two_level");
}

TEST_CASE("MX recipes match the reference for every element format", "[block][golden]") {
  using namespace kvq::fmt;
  auto run = [](auto e4m3_like, const oracle::fdesc& f, const char* nm) {
    using E = decltype(e4m3_like);
    check_recipe(kb::mx_floor<E>{}, kb::tensor_value::computed(),
                 [&f](const std::vector<float>& x) { return oracle::mx(x, f, 0); }, nm);
    check_recipe(kb::mx_floor_microxcaling<E>{}, kb::tensor_value::computed(),
                 [&f](const std::vector<float>& x) { return oracle::mx(x, f, 0, true); }, nm);
    check_recipe(kb::mx_rceil_te<E>{}, kb::tensor_value::computed(),
                 [&f](const std::vector<float>& x) { return oracle::mx(x, f, 1); }, nm);
    check_recipe(kb::mx_rceil_torchao<E>{}, kb::tensor_value::computed(),
                 [&f](const std::vector<float>& x) { return oracle::mx(x, f, 2); }, nm);
  };
  run(e4m3{}, oracle::E4M3, "mxfp8 e4m3");
  run(e5m2{}, oracle::E5M2, "mxfp8 e5m2");
  run(e3m2{}, oracle::E3M2, "mxfp6 e3m2");
  run(e2m3{}, oracle::E2M3, "mxfp6 e2m3");
  run(e2m1{}, oracle::E2M1, "mxfp4");
}

TEST_CASE("vLLM FP8 per-tensor KV matches the reference", "[block][golden]") {
  for (float sc : {1.0f, 0.05f, 37.5f}) {
    check_recipe(kb::fp8_e4m3_per_tensor{}, kb::tensor_value::given(sc),
                 [sc](const std::vector<float>& x) { return oracle::fp8_tensor(x, oracle::E4M3, sc); }, "fp8 e4m3");
    check_recipe(kb::fp8_e5m2_per_tensor{}, kb::tensor_value::given(sc),
                 [sc](const std::vector<float>& x) { return oracle::fp8_tensor(x, oracle::E5M2, sc); }, "fp8 e5m2");
  }
  // computed: vLLM's first-batch calibration amax * fp32(1/200)
  check_recipe(kb::fp8_e4m3_per_tensor{}, kb::tensor_value::computed(),
               [](const std::vector<float>& x) {
                 return oracle::fp8_tensor(x, oracle::E4M3, oracle::amax_torch(x.data(), x.size()) * (1.0f / 200.0f));
               },
               "fp8 e4m3 calibrated");
}

TEST_CASE("vLLM per-token-head FP8/INT8 (IEEE instruction model) matches the reference", "[block][golden]") {
  for (std::size_t hd : {std::size_t(64), std::size_t(128)}) {
    kb::fp8_per_token_head f;
    f.head_dim = hd;
    check_recipe(f, kb::tensor_value::computed(),
                 [hd](const std::vector<float>& x) { return oracle::per_token_head(x, hd, false); }, "fp8 per token-head");
    kb::int8_per_token_head i8;
    i8.head_dim = hd;
    check_recipe(i8, kb::tensor_value::computed(),
                 [hd](const std::vector<float>& x) { return oracle::per_token_head(x, hd, true); }, "int8 per token-head");
  }
}

TEST_CASE("KIVI integer groups match the reference", "[block][golden]") {
  for (std::size_t g : {std::size_t(32), std::size_t(64)}) {
    kb::kivi_int2 k2;
    k2.group = g;
    kb::kivi_int4 k4;
    k4.group = g;
    kb::kivi_int8 k8;
    k8.group = g;
    check_recipe(k2, kb::tensor_value::computed(), [g](const std::vector<float>& x) { return oracle::kivi(x, g, 2); }, "kivi2");
    check_recipe(k4, kb::tensor_value::computed(), [g](const std::vector<float>& x) { return oracle::kivi(x, g, 4); }, "kivi4");
    check_recipe(k8, kb::tensor_value::computed(), [g](const std::vector<float>& x) { return oracle::kivi(x, g, 8); }, "kivi8");
  }
}

TEST_CASE("KIVI in fp16 arithmetic matches fp16 torch ops", "[block][golden]") {
  // The oracle rounds every op to binary16 with the compiler's _Float16 conversion.
  auto h = [](float v) { return static_cast<float>(static_cast<_Float16>(v)); };
  const auto x0 = oracle::make_tensor(2048, 11, true, true, false);
  std::vector<std::uint16_t> xh(x0.size());
  std::vector<float> xf(x0.size());
  for (std::size_t i = 0; i < x0.size(); ++i) {
    const _Float16 v = static_cast<_Float16>(x0[i]);
    std::memcpy(&xh[i], &v, 2);
    xf[i] = static_cast<float>(v);
  }
  kb::kivi_group_fp16<4> s;
  const kb::buffer_sizes z = kb::sizes_of(s, xh.size());
  std::vector<std::uint8_t> codes(z.code_bytes);
  std::vector<float> sc(z.scales), zr(z.zeros);
  kb::quantize<kb::kivi_group_fp16<4>, kb::fp16_input>(s, xh.data(), xh.size(), kb::tensor_value::computed(), codes.data(),
                                                       codes.size(), sc.data(), sc.size(), zr.data(), zr.size());
  std::vector<float> deq(xh.size());
  kb::dequantize(s, codes.data(), codes.size(), sc.data(), sc.size(), zr.data(), zr.size(), 1.0f, deq.data(), deq.size());
  std::size_t bad = 0;
  for (std::size_t b = 0; b < xf.size() / 32; ++b) {
    float mn = xf[32 * b], mx = xf[32 * b];
    for (int i = 0; i < 32; ++i) {
      mn = std::min(mn, xf[32 * b + i]);
      mx = std::max(mx, xf[32 * b + i]);
    }
    const float s_ref = h(h(mx - mn) * (1.0f / 15.0f));
    if (!same_bits(s_ref, sc[b]) || !same_bits(mn, zr[b])) ++bad;
    for (int i = 0; i < 32; ++i) {
      float q = h(h(xf[32 * b + i] - mn) / s_ref);
      const int c = std::isnan(q) ? 0 : static_cast<int>(std::nearbyint(std::min(std::max(q, 0.0f), 15.0f)));
      if (unpack(codes, 32 * b + i, 4) != c) ++bad;
      const float d_ref = h(h(static_cast<float>(c) * s_ref) + mn);
      if (!same_bits(d_ref, deq[32 * b + i])) ++bad;
    }
  }
  CHECK(bad == 0);
}

TEST_CASE("bf16 and fp16 inputs give the float results of their widened values", "[block][golden]") {
  const auto x0 = oracle::make_tensor(1024, 12, true, true, true);
  std::vector<std::uint16_t> xb(x0.size());
  std::vector<float> xw(x0.size());
  for (std::size_t i = 0; i < x0.size(); ++i) {
    xb[i] = static_cast<std::uint16_t>(oracle::fbits(x0[i]) >> 16);  // truncation: any bf16 pattern will do
    xw[i] = oracle::bf16f(xb[i]);
  }
  auto codes_of = [](auto s, const auto* x, std::size_t n, auto in_tag) {
    using S = decltype(s);
    using In = decltype(in_tag);
    const kb::buffer_sizes z = kb::sizes_of(s, n);
    std::vector<std::uint8_t> c(z.code_bytes);
    std::vector<typename S::scale_type> sc(z.scales);
    std::vector<float> zr(z.zeros);
    kb::quantize<S, In>(s, x, n, kb::tensor_value::given(0.02f), c.data(), c.size(), sc.data(), sc.size(), zr.data(), zr.size());
    std::vector<std::uint8_t> all(c);
    for (auto v : sc) {
      unsigned char b[sizeof(v)];
      std::memcpy(b, &v, sizeof(v));
      all.insert(all.end(), b, b + sizeof(v));
    }
    return all;
  };
  CHECK(codes_of(kb::nvfp4_vllm<>{}, xb.data(), xb.size(), kb::bf16_input{}) ==
        codes_of(kb::nvfp4_vllm<>{}, xw.data(), xw.size(), kb::f32_input{}));
  CHECK(codes_of(kb::nvfp4_te{}, xb.data(), xb.size(), kb::bf16_input{}) ==
        codes_of(kb::nvfp4_te{}, xw.data(), xw.size(), kb::f32_input{}));
  CHECK(codes_of(kb::mxfp4_rceil{}, xb.data(), xb.size(), kb::bf16_input{}) ==
        codes_of(kb::mxfp4_rceil{}, xw.data(), xw.size(), kb::f32_input{}));
  CHECK(codes_of(kb::fp8_per_token_head{}, xb.data(), xb.size(), kb::bf16_input{}) ==
        codes_of(kb::fp8_per_token_head{}, xw.data(), xw.size(), kb::f32_input{}));
}
