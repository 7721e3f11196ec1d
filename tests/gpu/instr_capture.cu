// tests/gpu/instr_capture.cu — captures the GPU's approximate instructions into kvq
// instruction tables (kvq/block/instr_table.hpp) and checks the table-driven models
// (kvq/block/instr_models.hpp) against the hardware on every input.
//
//   kvq_instr_capture --out DIR [--driver STRING] [--quick]
//
// For the GPU it runs on (arch tag sm89 / sm90 / sm100 from the compute capability):
//   rcp.approx.ftz.f32  all 2^23 mantissas of [1, 2) -> table; then the model with
//                       that table vs the instruction on all 2^32 inputs (every
//                       exponent and sign, subnormals, 0, Inf, NaN), mismatches
//                       counted per (sign, exponent) class
//   ex2.approx.ftz.f32  the same: fractions from [1, 2) -> table; the model's
//                       fixed-point rounding (rn / rz / rd) chosen by trying each on
//                       every |x| < 1; all 2^32 inputs checked; the per-class counts
//                       show where the model still does not hold
//   ex2.approx.f16x2    all 2^16 inputs in the low lane -> table; the high lane fed a
//                       permutation of the inputs checks that the lanes are independent
//   div.full.f32        no table: the model (a * rcp.approx(b), with the 1/4 scaling
//                       for 2^126 < |b| < 2^128) over the captured rcp table vs the
//                       instruction on 2^30 random bit patterns (--quick: 2^24), every
//                       mantissa of b in [1, 2) at several exponents for fixed a, and
//                       the reported case 4.6875 / 0.9375 (0x40a00001 on sm_120)
// Writes DIR/<model>.kvqinstr for the three tables (metadata: GPU, arch, driver, CUDA
// runtime, UTC date, reference, and "mismatches" = the exhaustive count) and
// DIR/instr_capture_report.txt. How a table is committed: docs/instr.md.
// Exit status: 0 captured (mismatches are findings, in the report), 2 bad arguments,
// 3 CUDA error, 77 no GPU.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include <kvq/block/instr_models.hpp>
#include <kvq/block/instr_registry.hpp>
#include <kvq/block/instr_table.hpp>

#include "cuda_check.hpp"

namespace {

using kvq::instr::instruction;
using kvq::instr::table_view;

// ---- the instructions, as inline PTX ---------------------------------------------------
__device__ __forceinline__ float hw_rcp(float a) {
  float r;
  asm volatile("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a));
  return r;
}
__device__ __forceinline__ float hw_ex2(float a) {
  float r;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(a));
  return r;
}
__device__ __forceinline__ std::uint32_t hw_ex2_f16x2(std::uint32_t a) {
  std::uint32_t r;
  asm volatile("ex2.approx.f16x2 %0, %1;" : "=r"(r) : "r"(a));
  return r;
}
__device__ __forceinline__ float hw_div(float a, float b) {
  float r;
  asm volatile("div.full.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
}

__device__ __forceinline__ std::uint32_t fb(float x) { return __float_as_uint(x); }
__device__ __forceinline__ float bf(std::uint32_t u) { return __uint_as_float(u); }

constexpr int kClasses = 512;    // (sign, biased exponent) of the input
constexpr int kMaxRecords = 64;  // first mismatches kept

struct mismatch_log {
  unsigned long long per_class[kClasses];
  unsigned long long total;
  unsigned int n_records;
  std::uint32_t rec[kMaxRecords][4];  // input a, input b, hardware, model
};

__device__ void record(mismatch_log* log, int cls, std::uint32_t a, std::uint32_t b, std::uint32_t hw, std::uint32_t model) {
  atomicAdd(&log->per_class[cls], 1ull);
  atomicAdd(&log->total, 1ull);
  const unsigned int slot = atomicAdd(&log->n_records, 1u);
  if (slot < kMaxRecords) {
    log->rec[slot][0] = a;
    log->rec[slot][1] = b;
    log->rec[slot][2] = hw;
    log->rec[slot][3] = model;
  }
}

// ---- capture kernels ------------------------------------------------------------------
__global__ void capture_binade(int op, std::uint32_t* out) {
  const std::uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= (1u << 23)) return;
  const float x = bf(0x3f800000u | k);
  out[k] = fb(op == 0 ? hw_rcp(x) : hw_ex2(x));
}

/// Low lane: input k; high lane: a permutation of the inputs (checks lane independence).
__device__ __forceinline__ std::uint32_t f16_partner(std::uint32_t k) { return (k * 40503u + 7u) & 0xffffu; }
__global__ void capture_f16x2(std::uint32_t* out) {
  const std::uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= (1u << 16)) return;
  out[k] = hw_ex2_f16x2(k | (f16_partner(k) << 16));
}

// ---- exhaustive model checks -----------------------------------------------------------
__global__ void verify_all_f32(int op, table_view t, std::uint64_t start, std::uint64_t n, mismatch_log* log) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    const std::uint32_t u = static_cast<std::uint32_t>(start + i);
    const float x = bf(u);
    const std::uint32_t hw = fb(op == 0 ? hw_rcp(x) : hw_ex2(x));
    const std::uint32_t model = fb(op == 0 ? kvq::instr::rcp_approx_ftz(x, &t) : kvq::instr::ex2_approx_ftz(x, &t));
    if (hw != model) record(log, static_cast<int>(u >> 23), u, 0, hw, model);
  }
}

__global__ void verify_f16x2_lanes(table_view t, const std::uint32_t* captured, mismatch_log* log) {
  const std::uint32_t k = blockIdx.x * blockDim.x + threadIdx.x;
  if (k >= (1u << 16)) return;
  const std::uint32_t in = k | (f16_partner(k) << 16);
  const std::uint32_t model = kvq::instr::ex2_approx_f16x2(in, &t);
  if (captured[k] != model) record(log, static_cast<int>((k >> 10) & 0x3f), in, 0, captured[k], model);
}

__device__ __forceinline__ std::uint64_t splitmix(std::uint64_t z) {
  z += 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

/// mode 0: random bit patterns of a and b; mode 1: a = a_fixed, b = every mantissa at exponent e_b.
__global__ void verify_div(table_view rcp_t, int mode, std::uint64_t n, float a_fixed, std::uint32_t e_b, mismatch_log* log) {
  const std::uint64_t stride = static_cast<std::uint64_t>(gridDim.x) * blockDim.x;
  for (std::uint64_t i = blockIdx.x * static_cast<std::uint64_t>(blockDim.x) + threadIdx.x; i < n; i += stride) {
    std::uint32_t ua, ub;
    if (mode == 0) {
      const std::uint64_t z = splitmix(i);
      ua = static_cast<std::uint32_t>(z);
      ub = static_cast<std::uint32_t>(z >> 32);
    } else {
      ua = fb(a_fixed);
      ub = (e_b << 23) | static_cast<std::uint32_t>(i & 0x7fffffu);
    }
    const float a = bf(ua), b = bf(ub);
    const std::uint32_t hw = fb(hw_div(a, b));
    const std::uint32_t model = fb(kvq::instr::div_full(a, b, &rcp_t));
    const bool both_nan = (hw & 0x7fffffffu) > 0x7f800000u && (model & 0x7fffffffu) > 0x7f800000u;
    if (hw != model && !both_nan) record(log, static_cast<int>(ub >> 23), ua, ub, hw, model);
  }
}

__global__ void div_one(float a, float b, std::uint32_t* out) { out[0] = fb(hw_div(a, b)); }

/// The recipe policies compiled for the device are the instructions themselves.
__global__ void policy_on_device(std::uint32_t n, mismatch_log* log) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float x = bf(0x3c000000u + i * 977u), y = bf(0x3f000000u + i * 131u);
  using P = kvq::instr::gpu_approx<kvq::instr::sm90>;
  const kvq::instr::exp2_gpu_approx<kvq::instr::sm90> e2;
  if (fb(P::rcp(x)) != fb(hw_rcp(x))) record(log, 0, fb(x), 0, fb(hw_rcp(x)), fb(P::rcp(x)));
  if (fb(P::div(y, x)) != fb(hw_div(y, x))) record(log, 1, fb(y), fb(x), fb(hw_div(y, x)), fb(P::div(y, x)));
  if (fb(e2(y)) != fb(hw_ex2(y))) record(log, 2, fb(y), 0, fb(hw_ex2(y)), fb(e2(y)));
}

// ---- host helpers ----------------------------------------------------------------------
struct device_table {
  std::uint8_t* codes = nullptr;
  kvq::instr::table_exception* exc = nullptr;
  table_view view{};
  explicit device_table(const kvq::instr::instr_table& t) {
    KVQ_CUDA_CHECK(cudaMalloc(&codes, t.codes.size()));
    KVQ_CUDA_CHECK(cudaMemcpy(codes, t.codes.data(), t.codes.size(), cudaMemcpyHostToDevice));
    const std::size_t eb = (t.exceptions.size() + 1) * sizeof(kvq::instr::table_exception);
    KVQ_CUDA_CHECK(cudaMalloc(&exc, eb));
    if (!t.exceptions.empty())
      KVQ_CUDA_CHECK(cudaMemcpy(exc, t.exceptions.data(), t.exceptions.size() * sizeof(t.exceptions[0]),
                                cudaMemcpyHostToDevice));
    view = t.view();  // variant from the metadata
    view.codes = codes;
    view.exceptions = exc;
  }
  ~device_table() {
    cudaFree(codes);
    cudaFree(exc);
  }
  device_table(const device_table&) = delete;
  device_table& operator=(const device_table&) = delete;
};

struct log_buffer {
  mismatch_log* d = nullptr;
  log_buffer() {
    KVQ_CUDA_CHECK(cudaMalloc(&d, sizeof(mismatch_log)));
    KVQ_CUDA_CHECK(cudaMemset(d, 0, sizeof(mismatch_log)));
  }
  ~log_buffer() { cudaFree(d); }
  mismatch_log get() const {
    mismatch_log h;
    KVQ_CUDA_CHECK(cudaDeviceSynchronize());
    KVQ_CUDA_CHECK(cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost));
    return h;
  }
};

std::string hex32(std::uint32_t v) {
  char b[16];
  std::snprintf(b, sizeof b, "0x%08x", v);
  return b;
}

void report_log(FILE* f, const char* what, const mismatch_log& m, bool classes_are_f32) {
  std::fprintf(f, "%s: %llu mismatches\n", what, m.total);
  if (m.total == 0) return;
  if (classes_are_f32) {
    std::fprintf(f, "  per input class (sign, biased exponent of the input [of b for div]): count\n");
    for (int c = 0; c < kClasses; ++c)
      if (m.per_class[c]) std::fprintf(f, "    %c e=%3d: %llu\n", c >= 256 ? '-' : '+', c & 255, m.per_class[c]);
  }
  const unsigned int n = m.n_records < kMaxRecords ? m.n_records : kMaxRecords;
  std::fprintf(f, "  first %u (a, b, hardware, model):\n", n);
  for (unsigned int i = 0; i < n; ++i)
    std::fprintf(f, "    %s %s %s %s\n", hex32(m.rec[i][0]).c_str(), hex32(m.rec[i][1]).c_str(),
                 hex32(m.rec[i][2]).c_str(), hex32(m.rec[i][3]).c_str());
}

}  // namespace

int main(int argc, char** argv) {
  std::string out_dir, driver = "unknown";
  bool quick = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--out" && i + 1 < argc) out_dir = argv[++i];
    else if (a == "--driver" && i + 1 < argc) driver = argv[++i];
    else if (a == "--quick") quick = true;
    else {
      std::fprintf(stderr, "usage: %s --out DIR [--driver STRING] [--quick]\n", argv[0]);
      return 2;
    }
  }
  if (out_dir.empty()) {
    std::fprintf(stderr, "usage: %s --out DIR [--driver STRING] [--quick]\n", argv[0]);
    return 2;
  }
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    std::printf("kvq instr capture: no usable CUDA device; nothing captured\n");
    return 77;
  }
  cudaDeviceProp prop;
  KVQ_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  const int cc = prop.major * 10 + prop.minor;
  const std::string arch = cc == 89 ? "sm89" : cc == 90 ? "sm90" : cc == 100 ? "sm100" : "sm" + std::to_string(cc);
  int rt = 0, drv = 0;
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  auto meta = [&](const std::string& stem, const char* base, const char* domain) {
    return std::vector<std::pair<std::string, std::string>>{
        {"model", stem + "_" + arch}, {"arch", arch},       {"gpu", prop.name},
        {"driver", driver},          {"cuda_driver_api", std::to_string(drv)},
        {"cuda_runtime", std::to_string(rt)}, {"date", date}, {"base", base}, {"domain", domain}};
  };
  const std::string report_path = out_dir + "/instr_capture_report.txt";
  FILE* rep = std::fopen(report_path.c_str(), "w");
  if (!rep) {
    std::fprintf(stderr, "kvq instr capture: cannot write %s (does --out exist?)\n", report_path.c_str());
    return 2;
  }
  std::fprintf(rep, "kvq instruction capture on %s (cc %d.%d, arch tag %s), driver %s, CUDA driver API %d, runtime %d, %s\n",
               prop.name, prop.major, prop.minor, arch.c_str(), driver.c_str(), drv, rt, date);
  std::printf("kvq instr capture on %s (%s)\n", prop.name, arch.c_str());

  const std::uint32_t N23 = 1u << 23;
  std::uint32_t* d_out = nullptr;
  KVQ_CUDA_CHECK(cudaMalloc(&d_out, N23 * sizeof(std::uint32_t)));
  std::vector<std::uint32_t> hw(N23);
  kvq::instr::instr_table rcp_table;

  // ---- rcp and ex2 f32 ----
  for (int op = 0; op < 2; ++op) {
    const instruction ins = op == 0 ? instruction::rcp_approx_ftz_f32 : instruction::ex2_approx_ftz_f32;
    const char* stem = op == 0 ? "rcp_approx_ftz_f32" : "ex2_approx_ftz_f32";
    capture_binade<<<N23 / 256, 256>>>(op, d_out);
    KVQ_CUDA_CHECK(cudaGetLastError());
    KVQ_CUDA_CHECK(cudaMemcpy(hw.data(), d_out, N23 * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
    kvq::instr::instr_table t = kvq::instr::table_from_results(
        ins, hw.data(), N23,
        meta(stem, op == 0 ? "correctly rounded 1/(1+k*2^-23)" : "kvq::math::exp2(1+k*2^-23)",
             "k = 23-bit mantissa of an input in [1,2)"));
    std::fprintf(rep, "\n%s: table of %u entries, %zu exceptions\n", kvq::instr::to_string(ins), t.count, t.exceptions.size());
    if (op == 1) {
      // The model's fixed-point rounding for |x| < 1: try each variant on all those inputs.
      const char* names[3] = {"rn", "rz", "rd"};
      unsigned long long best = ~0ull;
      int best_v = 0;
      for (int var = 0; var < 3; ++var) {
        t.set("fixed_point", names[var]);
        device_table dt(t);
        log_buffer lb;
        const std::uint64_t n = quick ? (1ull << 26) : 0x3f800000ull;
        verify_all_f32<<<4096, 256>>>(op, dt.view, 0, n, lb.d);
        verify_all_f32<<<4096, 256>>>(op, dt.view, 0x80000000ull, n, lb.d);
        KVQ_CUDA_CHECK(cudaGetLastError());
        const mismatch_log m = lb.get();
        std::fprintf(rep, "  fixed_point=%s: %llu mismatches on %s inputs with |x| < 1\n", names[var], m.total,
                     quick ? "2^27" : "all");
        if (m.total < best) {
          best = m.total;
          best_v = var;
        }
      }
      t.set("fixed_point", names[best_v]);
      std::fprintf(rep, "  chosen: fixed_point=%s\n", names[best_v]);
    }
    {
      device_table dt(t);
      log_buffer lb;
      const std::uint64_t total = quick ? (1ull << 28) : (1ull << 32);
      const std::uint64_t start = quick ? 0x30000000ull : 0;  // quick: a window around [2^-31, 2^1)
      verify_all_f32<<<4096, 256>>>(op, dt.view, start, total, lb.d);
      KVQ_CUDA_CHECK(cudaGetLastError());
      const mismatch_log m = lb.get();
      report_log(rep, quick ? "model vs hardware, 2^28 inputs from 0x30000000" : "model vs hardware, all 2^32 inputs", m, true);
      t.set("mismatches", quick ? "unchecked" : std::to_string(m.total));
      t.set("checked", quick ? "2^28 inputs" : "all 2^32 inputs");
      std::printf("  %s: %zu exceptions, %llu mismatches of the model\n", kvq::instr::to_string(ins), t.exceptions.size(),
                  m.total);
    }
    const std::string path = out_dir + "/" + stem + "_" + arch + ".kvqinstr";
    kvq::instr::write_table_file(path, t);
    std::fprintf(rep, "written: %s\n", path.c_str());
    if (op == 0) rcp_table = t;
  }

  // ---- ex2.approx.f16x2 ----
  {
    capture_f16x2<<<256, 256>>>(d_out);
    KVQ_CUDA_CHECK(cudaGetLastError());
    std::vector<std::uint32_t> pair(1u << 16), lo(1u << 16);
    KVQ_CUDA_CHECK(cudaMemcpy(pair.data(), d_out, pair.size() * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
    for (std::size_t k = 0; k < lo.size(); ++k) lo[k] = pair[k] & 0xffffu;
    kvq::instr::instr_table t = kvq::instr::table_from_results(
        instruction::ex2_approx_f16x2, lo.data(), 1u << 16,
        meta("ex2_approx_f16x2", "2^x rounded to nearest f16 (kvq::math::exp2 in double)", "all f16 inputs (low lane)"));
    device_table dt(t);
    log_buffer lb;
    verify_f16x2_lanes<<<256, 256>>>(dt.view, d_out, lb.d);
    KVQ_CUDA_CHECK(cudaGetLastError());
    const mismatch_log m = lb.get();
    std::fprintf(rep, "\nex2.approx.f16x2: table of %u entries, %zu exceptions\n", t.count, t.exceptions.size());
    report_log(rep, "both lanes (high lane: permuted inputs) vs the low-lane table", m, false);
    t.set("mismatches", std::to_string(m.total));
    t.set("checked", "all 2^16 inputs in both lanes");
    const std::string path = out_dir + "/ex2_approx_f16x2_" + arch + ".kvqinstr";
    kvq::instr::write_table_file(path, t);
    std::fprintf(rep, "written: %s\n", path.c_str());
    std::printf("  ex2.approx.f16x2: %zu exceptions, %llu lane mismatches\n", t.exceptions.size(), m.total);
  }

  // ---- div.full.f32 ----
  {
    device_table dt(rcp_table);
    std::fprintf(rep, "\ndiv.full.f32 (model: a * rcp.approx.ftz(b) over the captured rcp table, 1/4 scaling for 2^126 < |b| < 2^128)\n");
    {
      log_buffer lb;
      const std::uint64_t n = quick ? (1ull << 24) : (1ull << 30);
      verify_div<<<4096, 256>>>(dt.view, 0, n, 0.0f, 0, lb.d);
      KVQ_CUDA_CHECK(cudaGetLastError());
      const mismatch_log m = lb.get();
      report_log(rep, quick ? "random bit patterns (2^24)" : "random bit patterns (2^30)", m, true);
      std::printf("  div.full.f32: %llu mismatches on random pairs\n", m.total);
    }
    const float as[] = {1.0f, 4.6875f, 3.0f, -7.5f, 1e-30f, 1e30f, 1.17549435e-38f};
    const std::uint32_t es[] = {127, 1, 100, 200, 252, 253, 254};
    unsigned long long sum = 0;
    for (float a : as)
      for (std::uint32_t e : es) {
        log_buffer lb;
        verify_div<<<1024, 256>>>(dt.view, 1, N23, a, e, lb.d);
        KVQ_CUDA_CHECK(cudaGetLastError());
        const mismatch_log m = lb.get();
        sum += m.total;
        if (m.total) {
          char what[96];
          std::snprintf(what, sizeof what, "a = %a, b = every mantissa at biased exponent %u", static_cast<double>(a), e);
          report_log(rep, what, m, false);
        }
      }
    std::fprintf(rep, "fixed a x every mantissa of b (7 x 7 x 2^23 pairs): %llu mismatches\n", sum);
    const table_view rcp_host_view = rcp_table.view();
    div_one<<<1, 1>>>(4.6875f, 0.9375f, d_out);
    std::uint32_t r = 0;
    KVQ_CUDA_CHECK(cudaMemcpy(&r, d_out, 4, cudaMemcpyDeviceToHost));
    const std::uint32_t model = kvq::bit_cast<std::uint32_t>(kvq::instr::div_full(4.6875f, 0.9375f, &rcp_host_view));
    std::fprintf(rep, "4.6875 / 0.9375: hardware %s, model %s, IEEE 0x40a00000 (reported on sm_120: 0x40a00001)\n",
                 hex32(r).c_str(), hex32(model).c_str());
    std::printf("  div.full.f32: 4.6875/0.9375 = %s (model %s); fixed-a sweeps: %llu mismatches\n", hex32(r).c_str(),
                hex32(model).c_str(), sum);
  }
  {
    log_buffer lb;
    policy_on_device<<<256, 256>>>(1u << 16, lb.d);
    KVQ_CUDA_CHECK(cudaGetLastError());
    report_log(rep, "\ninstr::gpu_approx / exp2_gpu_approx on the device vs the instructions", lb.get(), false);
  }
  cudaFree(d_out);
  std::fclose(rep);
  std::printf("kvq instr capture: tables and %s written\n", report_path.c_str());
  return 0;
}
