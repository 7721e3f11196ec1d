// tests/gpu/gpu_common.hpp — shared pieces of the GPU check driver (host side).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace kvq_gpu {

/// One line of the summary.
enum class verdict { pass, fail, hwdiff, skipped };

inline const char* to_string(verdict v) {
  switch (v) {
    case verdict::pass: return "PASS";
    case verdict::fail: return "FAIL";
    case verdict::hwdiff: return "HWDIFF";
    case verdict::skipped: return "SKIP";
  }
  return "?";
}

struct entry {
  std::string stage;   // sweep, decode, nvfp4, thrust, ...
  std::string name;    // what was checked
  verdict v = verdict::pass;
  std::string detail;  // counts, hashes, first mismatches
};

struct report {
  std::vector<entry> entries;
  void add(std::string stage, std::string name, verdict v, std::string detail) {
    std::printf("[%-6s] %-7s %s: %s\n", to_string(v), stage.c_str(), name.c_str(), detail.c_str());
    std::fflush(stdout);
    entries.push_back({std::move(stage), std::move(name), v, std::move(detail)});
  }
  int count(verdict v) const {
    int c = 0;
    for (const auto& e : entries) c += e.v == v;
    return c;
  }
};

/// Wall-clock deadline of the whole run: stages that would start after it are skipped.
struct deadline {
  std::chrono::steady_clock::time_point t0 = std::chrono::steady_clock::now();
  double budget_s = 240.0;
  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  double left() const { return budget_s - elapsed(); }
};

inline std::string hex(std::uint64_t v, int width = 16) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%0*llx", width, static_cast<unsigned long long>(v));
  return buf;
}

// ---- entry points of the translation units -------------------------------------------

struct options {
  double host_budget_s = 60.0;  // host-side re-hashing of the 2^32 sweeps (conversions; math again)
  bool quick = false;           // smaller sizes (smoke run)
};

struct device_caps {
  int cc_major = 0, cc_minor = 0;
  bool hw_fp8 = false;    // device pass used cvt ... e4m3x2/e5m2x2
  bool hw_short = false;  // device pass used cvt ... e2m1x2/e3m2x2/e2m3x2/ue8m0x2
  std::string name;
};

device_caps query_caps();                                                  // sweep.cu
void run_sweeps(report& rep, const options& opt, const device_caps& caps, deadline& dl);   // sweep.cu
void run_hw_decode(report& rep, const device_caps& caps);                  // sweep.cu
void run_nvfp4_kernel(report& rep, const options& opt, deadline& dl);      // nvfp4.cu
void run_thrust_convert(report& rep, const options& opt, deadline& dl);    // thrust_convert.cu
void run_thrust_decode(report& rep, const options& opt, deadline& dl);     // thrust_decode.cu
void run_thrust_block(report& rep, const options& opt, deadline& dl);      // thrust_block.cu
void run_thrust_block_kv(report& rep, const options& opt, deadline& dl);   // thrust_block_kv.cu
void run_thrust_math(report& rep, const options& opt, deadline& dl);       // thrust_math.cu
void run_thrust_attention(report& rep, const options& opt, deadline& dl);  // thrust_attention.cu
void run_math_sweeps(report& rep, const options& opt, deadline& dl);       // sweep.cu

}  // namespace kvq_gpu
