// tests/gpu/mma.cu — the recorded tensor-core inner products (tests/data/tensor-core-vectors)
// through this GPU's real mma instruction, compared line by line with the kvq::mma preset
// of this GPU and, for the files recorded on this GPU generation, with the recorded d;
// also runs the kvq::mma model itself on the device (KVQ_HD code) against the host model,
// and the AMD CDNA3 MFMA model (mfma.hpp) on the device against the host.
//
// Standalone program (own main, plain CUDA runtime, no zlib): tests/gpu/run.sh
// decompresses the vectors into a folder and runs
//   kvq_gpu_mma DATA_DIR ARCH        (ARCH: sm_80, sm_89, sm_90, sm_100)
// It cannot run without an NVIDIA GPU; tests/device/nvcc_check.sh only compiles it.
//
// Instructions (PTX ISA §9.7.14.5, mma.sync.aligned, warp-level m16n8k*):
//   bf16/fp16 -> fp32  m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32   (sm_80+)
//   fp16 -> fp16       m16n8k16.row.col.f16.f16.f16.f16                  (sm_80+)
//   e4m3/e5m2 -> fp32  m16n8k32.row.col.f32.{e4m3,e5m2}.{e4m3,e5m2}.f32  (sm_89+)
// One warp per inner product: row 0 of A holds a, column 0 of B holds b, C[0][0] = c,
// everything else is zero; lines shorter than the instruction's k are padded with zero
// products (the models treat those as absent). On sm_90 the recorded fp8 data came from
// wgmma with c = 0; mma.sync is used here for every target, which the H100 fp8 preset
// predicts to behave the same (inferred: this run is what would confirm it).
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <kvq/mma.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

#define KVQ_MMA_CHECK(call)                                                                   \
  do {                                                                                        \
    cudaError_t e_ = (call);                                                                  \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "kvq_gpu_mma: %s: %s\n", #call, cudaGetErrorString(e_));          \
      std::exit(2);                                                                           \
    }                                                                                         \
  } while (0)

enum kind : int { k_bf16_f32 = 0, k_f16_f32 = 1, k_f16_f16 = 2, k_e4m3_f32 = 3, k_e5m2_f32 = 4 };

// Operands packed per line: 32 bytes of a and b each (k = 16 two-byte or k = 32 one-byte
// elements), c and d as fp32 words (fp16 results are widened on the device).
struct line_in {
  std::uint8_t a[32];
  std::uint8_t b[32];
  float c;
  int k;          // elements in the line
  float fa[32];   // the same operands as floats, for the device-side model
  float fb[32];
};

// The kvq::mma model itself on the device (KVQ_HD code): must equal the host model.
__global__ void model_lines(const line_in* in, float* out, int n, kvq::mma::block_fma_params p,
                            kvq::mma::input_format f) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = kvq::mma::dot(p, f, in[i].fa, in[i].fb, in[i].k, in[i].c);
}

// The AMD CDNA3 MFMA model (kvq/mma/mfma.hpp, KVQ_HD) on the device: must equal the host.
__global__ void mfma_model_lines(const line_in* in, float* out, int n, kvq::mma::mfma_params p,
                                 kvq::mma::mfma_input fa, kvq::mma::mfma_input fb) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = kvq::mma::mfma_dot(p, fa, fb, in[i].fa, in[i].fb, in[i].k, in[i].c);
}

__device__ inline std::uint32_t pack_u16(const std::uint8_t* p, int i) {  // elements i, i+1 (2-byte)
  std::uint32_t lo = p[2 * i] | (p[2 * i + 1] << 8), hi = p[2 * i + 2] | (p[2 * i + 3] << 8);
  return lo | (hi << 16);
}
__device__ inline std::uint32_t pack_u8(const std::uint8_t* p, int i) {  // elements i..i+3 (1-byte)
  return std::uint32_t(p[i]) | (std::uint32_t(p[i + 1]) << 8) | (std::uint32_t(p[i + 2]) << 16) |
         (std::uint32_t(p[i + 3]) << 24);
}

template <int Kind>
__global__ void mma_lines(const line_in* in, float* out, int n) {
  const int line = blockIdx.x;
  if (line >= n) return;
  const int lane = threadIdx.x;
  const int group = lane >> 2, tig = lane & 3;
  const line_in& L = in[line];
  // Only row 0 of A (lanes with group 0) and column 0 of B (group 0) carry data.
  std::uint32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0, b0 = 0, b1 = 0;
  if (group == 0) {
    if (Kind == k_e4m3_f32 || Kind == k_e5m2_f32) {
      a0 = pack_u8(L.a, tig * 4);       // row 0, k = 4 tig .. 4 tig + 3
      a2 = pack_u8(L.a, tig * 4 + 16);  // row 0, k + 16
      b0 = pack_u8(L.b, tig * 4);       // col 0, k = 4 tig .. + 3
      b1 = pack_u8(L.b, tig * 4 + 16);
    } else {
      a0 = pack_u16(L.a, tig * 2);      // row 0, k = 2 tig, 2 tig + 1
      a2 = pack_u16(L.a, tig * 2 + 8);  // row 0, k + 8
      b0 = pack_u16(L.b, tig * 2);
      b1 = pack_u16(L.b, tig * 2 + 8);
    }
  }
  const float c = (lane == 0) ? L.c : 0.0f;
  float d0 = 0, d1 = 0, d2 = 0, d3 = 0;
  if (Kind == k_f16_f16) {
    const __half2 c01 = __halves2half2(__float2half_rn(c), __float2half_rn(0.0f));  // c is an fp16 value
    std::uint32_t cc0, cc1 = 0, dd0, dd1;
    std::memcpy(&cc0, &c01, 4);
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f16.f16.f16.f16 {%0,%1}, {%2,%3,%4,%5}, {%6,%7}, {%8,%9};\n"
                 : "=r"(dd0), "=r"(dd1)
                 : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "r"(cc0), "r"(cc1));
    __half2 h;
    std::memcpy(&h, &dd0, 4);
    d0 = __low2float(h);
  } else if (Kind == k_bf16_f32) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};\n"
        : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(c), "f"(0.0f), "f"(0.0f), "f"(0.0f));
  } else if (Kind == k_f16_f32) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%10,%11,%12,%13};\n"
        : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(c), "f"(0.0f), "f"(0.0f), "f"(0.0f));
  } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
    if (Kind == k_e4m3_f32) {
      asm volatile(
          "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
          "{%10,%11,%12,%13};\n"
          : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(c), "f"(0.0f), "f"(0.0f), "f"(0.0f));
    } else {
      asm volatile(
          "mma.sync.aligned.m16n8k32.row.col.f32.e5m2.e5m2.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
          "{%10,%11,%12,%13};\n"
          : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
          : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(c), "f"(0.0f), "f"(0.0f), "f"(0.0f));
    }
#else
    d0 = __int_as_float(0x7fc00000);  // no fp8 mma on this target
#endif
  }
  if (lane == 0) out[line] = d0;  // D[0][0] lives in lane 0, register 0
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream f(path);
  std::vector<std::string> v;
  for (std::string s; std::getline(f, s);) v.push_back(s);
  return v;
}

float f_of(std::uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}
std::uint32_t u_of(float x) {
  std::uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}
std::uint32_t bin_word(const std::string& s) {
  std::uint32_t u = 0;
  for (char ch : s)
    if (ch == '0' || ch == '1') u = (u << 1) | std::uint32_t(ch - '0');
  return u;
}

struct file_set {
  const char* gpu;
  const char* fmt;
  const char* out;
  kvq::mma::arch recorded_on;
  kvq::mma::input_format in;
  kvq::mma::output_format o;
  kind k;
};

const file_set kSets[] = {
    {"A100", "bf16", "fp32", kvq::mma::arch::sm_80, kvq::mma::input_format::bf16, kvq::mma::output_format::fp32, k_bf16_f32},
    {"A100", "fp16", "fp32", kvq::mma::arch::sm_80, kvq::mma::input_format::fp16, kvq::mma::output_format::fp32, k_f16_f32},
    {"A100", "fp16", "fp16", kvq::mma::arch::sm_80, kvq::mma::input_format::fp16, kvq::mma::output_format::fp16, k_f16_f16},
    {"L40S", "bf16", "fp32", kvq::mma::arch::sm_89, kvq::mma::input_format::bf16, kvq::mma::output_format::fp32, k_bf16_f32},
    {"L40S", "fp16", "fp32", kvq::mma::arch::sm_89, kvq::mma::input_format::fp16, kvq::mma::output_format::fp32, k_f16_f32},
    {"L40S", "fp16", "fp16", kvq::mma::arch::sm_89, kvq::mma::input_format::fp16, kvq::mma::output_format::fp16, k_f16_f16},
    {"L40S", "E4M3", "fp32", kvq::mma::arch::sm_89, kvq::mma::input_format::e4m3, kvq::mma::output_format::fp32, k_e4m3_f32},
    {"L40S", "E5M2", "fp32", kvq::mma::arch::sm_89, kvq::mma::input_format::e5m2, kvq::mma::output_format::fp32, k_e5m2_f32},
    {"H100", "bf16", "fp32", kvq::mma::arch::sm_90, kvq::mma::input_format::bf16, kvq::mma::output_format::fp32, k_bf16_f32},
    {"H100", "fp16", "fp32", kvq::mma::arch::sm_90, kvq::mma::input_format::fp16, kvq::mma::output_format::fp32, k_f16_f32},
    {"H100", "fp16", "fp16", kvq::mma::arch::sm_90, kvq::mma::input_format::fp16, kvq::mma::output_format::fp16, k_f16_f16},
    {"H100", "E4M3", "fp32", kvq::mma::arch::sm_90, kvq::mma::input_format::e4m3, kvq::mma::output_format::fp32, k_e4m3_f32},
    {"H100", "E5M2", "fp32", kvq::mma::arch::sm_90, kvq::mma::input_format::e5m2, kvq::mma::output_format::fp32, k_e5m2_f32},
    {"B200", "bf16", "fp32", kvq::mma::arch::sm_100, kvq::mma::input_format::bf16, kvq::mma::output_format::fp32, k_bf16_f32},
    {"B200", "fp16", "fp32", kvq::mma::arch::sm_100, kvq::mma::input_format::fp16, kvq::mma::output_format::fp32, k_f16_f32},
    {"B200", "fp16", "fp16", kvq::mma::arch::sm_100, kvq::mma::input_format::fp16, kvq::mma::output_format::fp16, k_f16_f16},
    {"B200", "E4M3", "fp32", kvq::mma::arch::sm_100, kvq::mma::input_format::e4m3, kvq::mma::output_format::fp32, k_e4m3_f32},
    {"B200", "E5M2", "fp32", kvq::mma::arch::sm_100, kvq::mma::input_format::e5m2, kvq::mma::output_format::fp32, k_e5m2_f32},
};

void encode_operand(float x, kvq::mma::input_format in, std::uint8_t* dst, int i) {
  using kvq::mma::input_format;
  if (in == input_format::bf16) {
    const std::uint16_t h = std::uint16_t(u_of(x) >> 16);  // exact: x is a bf16 value
    dst[2 * i] = std::uint8_t(h & 0xff), dst[2 * i + 1] = std::uint8_t(h >> 8);
  } else if (in == input_format::fp16) {
    const __half hv = __float2half_rn(x);
    std::uint16_t h;
    std::memcpy(&h, &hv, 2);
    dst[2 * i] = std::uint8_t(h & 0xff), dst[2 * i + 1] = std::uint8_t(h >> 8);
  } else {
    dst[i] = __nv_cvt_float_to_fp8(x, __NV_SATFINITE, in == input_format::e4m3 ? __NV_E4M3 : __NV_E5M2);
  }
}

template <int Kind>
void launch(const line_in* d_in, float* d_out, int n) {
  mma_lines<Kind><<<n, 32>>>(d_in, d_out, n);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: kvq_gpu_mma DATA_DIR ARCH (sm_80, sm_89, sm_90, sm_100)\n");
    return 2;
  }
  const std::string dir = argv[1];
  kvq::mma::arch here;
  try {
    here = kvq::mma::parse_arch(argv[2]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kvq_gpu_mma: %s\n", e.what());
    return 2;
  }
  int failures = 0;
  {
    // The CDNA3 MFMA model on the device against the host: bf16 operands of small spread
    // and e4m3fnuz codes, 32 products, nonzero c (deterministic, no data files needed).
    const int n = 512;
    std::vector<line_in> lines(static_cast<std::size_t>(n));
    std::uint32_t x = 12345u;
    auto next = [&x] { x = x * 1664525u + 1013904223u; return x; };
    const struct { kvq::mma::mfma_preset p; kvq::mma::mfma_input f; } mf[] = {
        {kvq::mma::mfma_preset::cdna3_bf16, kvq::mma::mfma_input::bf16},
        {kvq::mma::mfma_preset::cdna3_fp8, kvq::mma::mfma_input::e4m3fnuz}};
    for (const auto& m : mf) {
      std::vector<float> host(static_cast<std::size_t>(n)), dev(static_cast<std::size_t>(n));
      for (int i = 0; i < n; ++i) {
        line_in& l = lines[std::size_t(i)];
        std::memset(&l, 0, sizeof l);
        l.k = 32;
        for (int j = 0; j < 32; ++j) {
          // e4m3fnuz: 3 fraction bits, exponents -7..6; bf16 the same values (exact in both)
          const float va = std::ldexp(1.0f + float(next() % 8u) / 8.0f, int(next() % 14u) - 7);
          const float vb = std::ldexp(1.0f + float(next() % 8u) / 8.0f, int(next() % 14u) - 7);
          l.fa[j] = (next() & 1u) ? -va : va;
          l.fb[j] = vb;
        }
        l.c = std::ldexp(float(next() % 4096u) - 2048.0f, int(next() % 20u) - 30);
        host[std::size_t(i)] = kvq::mma::mfma_dot(kvq::mma::get_mfma_params(m.p), m.f, m.f, l.fa, l.fb, l.k, l.c);
      }
      line_in* d_in = nullptr;
      float* d_out = nullptr;
      KVQ_MMA_CHECK(cudaMalloc(&d_in, sizeof(line_in) * std::size_t(n)));
      KVQ_MMA_CHECK(cudaMalloc(&d_out, sizeof(float) * std::size_t(n)));
      KVQ_MMA_CHECK(cudaMemcpy(d_in, lines.data(), sizeof(line_in) * std::size_t(n), cudaMemcpyHostToDevice));
      mfma_model_lines<<<(n + 127) / 128, 128>>>(d_in, d_out, n, kvq::mma::get_mfma_params(m.p), m.f, m.f);
      KVQ_MMA_CHECK(cudaGetLastError());
      KVQ_MMA_CHECK(cudaMemcpy(dev.data(), d_out, sizeof(float) * std::size_t(n), cudaMemcpyDeviceToHost));
      cudaFree(d_in);
      cudaFree(d_out);
      int differ = 0;
      for (int i = 0; i < n; ++i) differ += u_of(dev[std::size_t(i)]) != u_of(host[std::size_t(i)]);
      if (differ != 0) ++failures;
      std::printf("[%s] mfma model %s on the device vs the host: %d/%d differ\n", differ == 0 ? "PASS" : "FAIL",
                  kvq::mma::name(m.p), differ, n);
    }
  }
  for (const auto& s : kSets) {
    const bool fp8 = s.in == kvq::mma::input_format::e4m3 || s.in == kvq::mma::input_format::e5m2;
    kvq::mma::preset_info p{};
    if (!kvq::mma::find_preset(here, s.in, s.o, p)) continue;  // e.g. fp8 on sm_80
    const std::string base = dir + "/" + s.gpu + "/" + s.fmt + "/";
    const auto A = read_lines(base + "a_" + s.gpu + "_" + s.fmt + ".txt");
    const auto B = read_lines(base + "b_" + s.gpu + "_" + s.fmt + ".txt");
    const auto C = read_lines(base + "c_" + s.gpu + "_fp32.txt");
    const auto D = read_lines(base + "d_" + s.gpu + "_" + s.out + ".txt");
    if (A.empty() || A.size() != B.size() || A.size() != C.size() || A.size() != D.size()) {
      std::printf("[SKIP] mma %s %s->%s: vectors missing under %s\n", s.gpu, s.fmt, s.out, base.c_str());
      continue;
    }
    const bool c_zero = fp8 && s.recorded_on == kvq::mma::arch::sm_90;  // recorded with c = 0
    const int n = int(A.size());
    std::vector<line_in> lines(static_cast<std::size_t>(n));
    std::vector<float> model(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
      std::memset(&lines[std::size_t(i)], 0, sizeof(line_in));
      std::vector<float> av, bv;
      std::istringstream sa(A[std::size_t(i)]), sb(B[std::size_t(i)]);
      for (std::string w; sa >> w;) av.push_back(f_of(std::uint32_t(std::stoul(w, nullptr, 16))));
      for (std::string w; sb >> w;) bv.push_back(f_of(std::uint32_t(std::stoul(w, nullptr, 16))));
      lines[std::size_t(i)].k = int(av.size());
      for (std::size_t j = 0; j < av.size() && j < 32; ++j) {
        lines[std::size_t(i)].fa[j] = av[j];
        lines[std::size_t(i)].fb[j] = bv[j];
        encode_operand(av[j], s.in, lines[std::size_t(i)].a, int(j));
        encode_operand(bv[j], s.in, lines[std::size_t(i)].b, int(j));
      }
      float c = c_zero ? 0.0f : f_of(bin_word(C[std::size_t(i)]));
      c = kvq::mma::to_output(s.o, c);
      lines[std::size_t(i)].c = c;
      model[std::size_t(i)] = kvq::mma::dot(p, s.in, av, bv, c);
    }
    line_in* d_in = nullptr;
    float* d_out = nullptr;
    KVQ_MMA_CHECK(cudaMalloc(&d_in, sizeof(line_in) * std::size_t(n)));
    KVQ_MMA_CHECK(cudaMalloc(&d_out, sizeof(float) * std::size_t(n)));
    KVQ_MMA_CHECK(cudaMemcpy(d_in, lines.data(), sizeof(line_in) * std::size_t(n), cudaMemcpyHostToDevice));
    switch (s.k) {
      case k_bf16_f32: launch<k_bf16_f32>(d_in, d_out, n); break;
      case k_f16_f32: launch<k_f16_f32>(d_in, d_out, n); break;
      case k_f16_f16: launch<k_f16_f16>(d_in, d_out, n); break;
      case k_e4m3_f32: launch<k_e4m3_f32>(d_in, d_out, n); break;
      case k_e5m2_f32: launch<k_e5m2_f32>(d_in, d_out, n); break;
    }
    KVQ_MMA_CHECK(cudaGetLastError());
    std::vector<float> hw(static_cast<std::size_t>(n)), dev_model(static_cast<std::size_t>(n));
    KVQ_MMA_CHECK(cudaMemcpy(hw.data(), d_out, sizeof(float) * std::size_t(n), cudaMemcpyDeviceToHost));
    model_lines<<<(n + 127) / 128, 128>>>(d_in, d_out, n, p.params, s.in);
    KVQ_MMA_CHECK(cudaGetLastError());
    KVQ_MMA_CHECK(cudaMemcpy(dev_model.data(), d_out, sizeof(float) * std::size_t(n), cudaMemcpyDeviceToHost));
    int dev_vs_host = 0;
    for (int i = 0; i < n; ++i) dev_vs_host += u_of(dev_model[std::size_t(i)]) != u_of(model[std::size_t(i)]);
    if (dev_vs_host != 0) ++failures;
    std::printf("[%s] mma model on the device vs the host, %s %s->%s lines of %s: %d/%d differ\n",
                dev_vs_host == 0 ? "PASS" : "FAIL", kvq::mma::name(here), s.fmt, s.out, s.gpu, dev_vs_host, n);
    cudaFree(d_in);
    cudaFree(d_out);
    int vs_model = 0, vs_record = 0, first = -1;
    const bool same_gen = s.recorded_on == here;
    for (int i = 0; i < n; ++i) {
      if (u_of(hw[std::size_t(i)]) != u_of(model[std::size_t(i)])) {
        ++vs_model;
        if (first < 0) first = i;
      }
      if (same_gen && u_of(hw[std::size_t(i)]) != bin_word(D[std::size_t(i)])) ++vs_record;
    }
    const bool ok = vs_model == 0;
    if (!ok && p.exact == kvq::mma::exactness::recorded) ++failures;
    std::printf("[%s] mma %s %s %s->%s lines of %s: %d/%d differ from the %s preset (%s)", ok ? "PASS" : (p.exact == kvq::mma::exactness::recorded ? "FAIL" : "FINDING"),
                kvq::mma::name(here), s.fmt, s.fmt, s.out, s.gpu, vs_model, n, kvq::mma::name(here), kvq::mma::name(p.exact));
    if (first >= 0)
      std::printf(", first line %d: gpu %08x model %08x", first + 1, u_of(hw[std::size_t(first)]), u_of(model[std::size_t(first)]));
    if (same_gen) std::printf("; %d differ from the recorded d", vs_record);
    std::printf("\n");
  }
  return failures == 0 ? 0 : 1;
}
