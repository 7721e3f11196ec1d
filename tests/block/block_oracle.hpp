// Independent, deliberately plain reference implementations for the block tests.
//
// Nothing here calls kvq: the element and scale encoders search a value table built
// from the format definitions (sign/exponent/mantissa/bias), and each recipe is written
// again, straight from the reference code it reproduces (TransformerEngine
// core_nvfp4.cuh / reference_nvfp4.py, vLLM nvfp4_utils.cuh / nvfp4_kv_cache_kernels.cu /
// quant_utils.cuh / triton_reshape_and_cache_flash.py, torchao nvfp4_tensor.py /
// mx_tensor.py, microxcaling mx_ops.py, KIVI new_pack.py), one block at a time.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

namespace oracle {

inline std::uint32_t fbits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float ffrom(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline const float FLTMAX = std::numeric_limits<float>::max();
inline float qnan() { return std::numeric_limits<float>::quiet_NaN(); }

// ------------------------------------------------------------------ formats
enum class sp { fn, ieee, none };
struct fdesc {
  int ebits, mbits, bias;
  sp special;
  int nan_code;  // CUDA host conversion of a float NaN
};
inline const fdesc E4M3{4, 3, 7, sp::fn, 0x7F};
inline const fdesc E5M2{5, 2, 15, sp::ieee, 0x7F};
inline const fdesc E3M2{3, 2, 3, sp::none, 0x1F};
inline const fdesc E2M3{2, 3, 1, sp::none, 0x1F};
inline const fdesc E2M1{2, 1, 1, sp::none, 0x07};

/// (value, magnitude code) of every finite non-negative code, ascending.
inline std::vector<std::pair<double, int>> table(const fdesc& f) {
  std::vector<std::pair<double, int>> t;
  const int emask = (1 << f.ebits) - 1, mmask = (1 << f.mbits) - 1;
  for (int code = 0; code < (1 << (f.ebits + f.mbits)); ++code) {
    const int e = code >> f.mbits, m = code & mmask;
    if (f.special == sp::fn && e == emask && m == mmask) continue;
    if (f.special == sp::ieee && e == emask) continue;
    const double v = e == 0 ? std::ldexp(static_cast<double>(m), 1 - f.bias - f.mbits)
                            : std::ldexp(1.0 + m / static_cast<double>(1 << f.mbits), e - f.bias);
    t.emplace_back(v, code);
  }
  return t;
}

/// Nearest code (ties to even code, or away from zero), saturating; NaN -> nan_code.
inline int encode(const fdesc& f, double x, bool ties_away = false) {
  if (std::isnan(x)) return f.nan_code;
  const auto t = table(f);
  const int signbit = std::signbit(x) ? (1 << (f.ebits + f.mbits)) : 0;
  const double a = std::fabs(x);
  int best;
  if (a >= t.back().first) {
    best = t.back().second;
  } else {
    std::size_t i = 0;
    while (!(t[i].first <= a && a <= t[i + 1].first)) ++i;
    const double dl = a - t[i].first, dh = t[i + 1].first - a;
    if (dl < dh) best = t[i].second;
    else if (dh < dl) best = t[i + 1].second;
    else best = ties_away ? t[i + 1].second : ((t[i].second & 1) == 0 ? t[i].second : t[i + 1].second);
  }
  return best | signbit;
}

inline double decode(const fdesc& f, int code) {
  const int mag = code & ((1 << (f.ebits + f.mbits)) - 1);
  const bool neg = (code >> (f.ebits + f.mbits)) & 1;
  for (const auto& p : table(f))
    if (p.second == mag) return neg ? -p.first : p.first;
  return std::nan("");
}

/// UE8M0 round up (cvt.rp.ue8m0x2.f32): NaN -> 0xFF, Inf -> 0xFE (satfinite) / 0xFF.
inline int ue8m0_up(double x, bool satfinite) {
  if (std::isnan(x)) return 0xFF;
  if (std::isinf(x)) return satfinite ? 0xFE : 0xFF;
  for (int k = -127; k <= 127; ++k)
    if (std::ldexp(1.0, k) >= x) return k + 127;
  return satfinite ? 0xFE : 0xFF;
}

// ------------------------------------------------------------------ inputs
inline float bf16f(std::uint16_t h) { return ffrom(static_cast<std::uint32_t>(h) << 16); }

/// Deterministic test tensors: Gaussian-ish values with outliers, zero blocks and,
/// when `specials`, NaN / Inf / -0 / denormals at fixed places.
inline std::vector<float> make_tensor(std::size_t n, unsigned seed, bool outliers, bool zero_blocks, bool specials,
                                      std::size_t zero_block = 16) {
  std::mt19937 g(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(n);
  for (auto& v : x) v = nd(g);
  if (outliers)
    for (std::size_t i = 7; i < n; i += 97) x[i] *= 1000.0f;
  if (zero_blocks)
    for (std::size_t b = zero_block; b + zero_block <= n; b += 5 * zero_block)
      for (std::size_t i = 0; i < zero_block; ++i) x[b + i] = 0.0f;
  if (specials && n >= 200) {
    x[3] = qnan();
    x[40] = std::numeric_limits<float>::infinity();
    x[41] = -std::numeric_limits<float>::infinity();
    x[70] = -0.0f;
    for (std::size_t i = 96; i < 128; ++i) x[i] = ffrom(0x00000100u + static_cast<std::uint32_t>(i)) * (i % 2 ? -1.f : 1.f);
    x[150] = ffrom(0x00000001u);
    x[151] = ffrom(0x007FFFFFu);
  }
  return x;
}

// ------------------------------------------------------------------ recipes
struct result {
  std::vector<int> codes;  // one per element, right-aligned
  std::vector<int> scale_codes;
  std::vector<float> scale_values;  // fp32 scales (per-token-head, KIVI)
  std::vector<float> zeros;
  float tensor = 1.0f;
};

inline float amax_fmaxf(const float* x, std::size_t n) {  // fmaxf from 0
  float m = 0.0f;
  for (std::size_t i = 0; i < n; ++i) m = std::fmax(m, std::fabs(x[i]));
  return m;
}
inline float amax_torch(const float* x, std::size_t n) {  // NaN propagates
  float m = 0.0f;
  for (std::size_t i = 0; i < n; ++i) {
    if (std::isnan(x[i])) return qnan();
    m = std::max(m, std::fabs(x[i]));
  }
  return m;
}
inline float amax_hmax(const float* x, std::size_t n) {  // __hmax2: NaN only if all NaN
  float m = qnan();
  for (std::size_t i = 0; i < n; ++i) {
    const float a = std::fabs(x[i]);
    if (std::isnan(m)) m = a;
    else if (!std::isnan(a) && a > m) m = a;
  }
  return m;
}

/// TransformerEngine NVFP4 (core_nvfp4.cuh + quantize_transpose_nvfp4.cuh).
inline result te_nvfp4(const std::vector<float>& x, bool enc_div_scale = false) {
  result r;
  const float amax = amax_fmaxf(x.data(), x.size());
  float s_enc = 448.0f * 6.0f / amax;
  if (std::isnan(s_enc) || s_enc > FLTMAX) s_enc = FLTMAX;
  if (amax == 0.0f || s_enc == 0.0f) s_enc = 1.0f;
  const float s_dec = static_cast<float>(1.0 / static_cast<double>(s_enc));
  r.tensor = amax;
  for (std::size_t b = 0; b < x.size() / 16; ++b) {
    const float* xb = x.data() + 16 * b;
    const float bamax = amax_fmaxf(xb, 16);
    const float t = s_enc * (1.0f / 6.0f);
    const int sf = encode(E4M3, bamax * t);
    r.scale_codes.push_back(sf);
    const float sff = static_cast<float>(decode(E4M3, sf));
    float inv;
    if (enc_div_scale) {
      inv = s_enc / sff;
    } else {
      const float p = sff * s_dec;
      inv = 1.0f / p;
      if (std::isnan(inv) || inv > FLTMAX) inv = FLTMAX;
    }
    for (int i = 0; i < 16; ++i) r.codes.push_back(encode(E2M1, xb[i] * inv));
  }
  return r;
}

/// vLLM NVFP4 KV store, IEEE reciprocals (cvt_warp_fp16_to_fp4).
inline result vllm_nvfp4(const std::vector<float>& x, float k_scale, bool four_over_six, bool fused_mad) {
  result r;
  r.tensor = k_scale;
  const float gs = 1.0f / k_scale;
  auto cand = [&](float vmax, float den, int* sf, float* os) {
    const float sfv = gs * (vmax * (1.0f / den));
    *sf = encode(E4M3, sfv);
    const float sff = static_cast<float>(decode(E4M3, *sf));
    *os = sff != 0.0f ? 1.0f / (sff * (1.0f / gs)) : 0.0f;
  };
  auto rte = [](float v) {  // round_to_nearest_e2m1
    const float ax = std::fabs(v);
    float q = ax <= 0.25f ? 0.0f : ax < 0.75f ? 0.5f : ax <= 1.25f ? 1.0f : ax < 1.75f ? 1.5f
            : ax <= 2.5f ? 2.0f : ax < 3.5f ? 3.0f : ax <= 5.0f ? 4.0f : 6.0f;
    return std::copysign(q, v);
  };
  auto mad = [&](float a, float b, float c) {
    if (fused_mad) return std::fma(a, b, c);
    const float p = a * b;
    return p + c;
  };
  auto err = [&](const float* xb, float os) {
    float e = 0.0f;
    const float dq = os != 0.0f ? 1.0f / os : 0.0f;
    for (int i = 0; i < 8; ++i) {
      const float vx = xb[2 * i], vy = xb[2 * i + 1];
      if (os == 0.0f) {
        e = e + mad(vx, vx, vy * vy);
      } else {
        const float dx = mad(rte(vx * os), dq, -vx), dy = mad(rte(vy * os), dq, -vy);
        e = e + mad(dx, dx, dy * dy);
      }
    }
    return e;
  };
  for (std::size_t b = 0; b < x.size() / 16; ++b) {
    const float* xb = x.data() + 16 * b;
    const float vmax = amax_hmax(xb, 16);
    int sf6, sf4;
    float os6, os4;
    cand(vmax, 6.0f, &sf6, &os6);
    int sf = sf6;
    float os = os6;
    if (four_over_six) {
      cand(vmax, 4.0f, &sf4, &os4);
      if (err(xb, os4) < err(xb, os6)) {
        sf = sf4;
        os = os4;
      }
    }
    r.scale_codes.push_back(sf);
    for (int i = 0; i < 16; ++i) r.codes.push_back(encode(E2M1, xb[i] * os));
  }
  return r;
}

/// torchao 0.18 nvfp4_quantize (CUDA: division by a Python scalar = multiply by fp32
/// reciprocal; the elements are multiplied by 1 / scale, computed as torchao writes it).
inline result torchao_nvfp4(const std::vector<float>& x, bool two_level) {
  result r;
  float pts = 1.0f;
  if (two_level) {
    pts = amax_torch(x.data(), x.size()) * (1.0f / 2688.0f);
    r.tensor = pts;
  }
  auto clampf = [](float v, float lo, float hi) { return std::isnan(v) ? v : std::min(std::max(v, lo), hi); };
  for (std::size_t b = 0; b < x.size() / 16; ++b) {
    const float* xb = x.data() + 16 * b;
    const float bs = amax_torch(xb, 16) * (1.0f / 6.0f);
    int sf;
    float mult;
    if (two_level) {
      sf = encode(E4M3, clampf(bs / pts, 0.015625f, 448.0f));
      const float inv_pts = 1.0f / pts;
      mult = inv_pts / static_cast<float>(decode(E4M3, sf));
    } else {
      sf = encode(E4M3, clampf(bs, 0.015625f, 448.0f));
      mult = 1.0f / static_cast<float>(decode(E4M3, sf));
    }
    r.scale_codes.push_back(sf);
    for (int i = 0; i < 16; ++i) r.codes.push_back(encode(E2M1, clampf(xb[i] * mult, -6.0f, 6.0f)));
  }
  return r;
}

/// MX: rule 0 = floor (torchao FLOOR / microxcaling), 1 = rceil TE, 2 = rceil torchao.
inline result mx(const std::vector<float>& x, const fdesc& f, int rule, bool ties_away = false) {
  result r;
  const auto t = table(f);
  const double maxv = t.back().first;
  const int emax = static_cast<int>(std::floor(std::log2(maxv)));
  for (std::size_t b = 0; b < x.size() / 32; ++b) {
    const float* xb = x.data() + 32 * b;
    int e;
    float inv;
    if (rule == 0) {
      const float amax = amax_torch(xb, 32);
      if (!std::isfinite(amax)) {
        e = 0xFF;
      } else {
        // microxcaling: floor(log2(amax)), amax == 0 -> log2(FLT_MIN normal)
        const double l = amax == 0.0f ? -126.0 : std::floor(std::log2(static_cast<double>(amax)));
        e = static_cast<int>(std::max(-127.0, l - emax)) + 127;
      }
      inv = e == 0xFF ? qnan() : static_cast<float>(std::ldexp(1.0, 127 - e));
    } else if (rule == 1) {
      const float amax = amax_fmaxf(xb, 32);
      e = ue8m0_up(static_cast<double>(amax * static_cast<float>(1.0 / maxv)), true);
      inv = e == 0 ? 1.0f : (e == 255 ? -std::numeric_limits<float>::infinity()
                                      : (e == 254 ? 0.0f : static_cast<float>(std::ldexp(1.0, 127 - e))));
    } else {
      const float amax = amax_torch(xb, 32);
      e = ue8m0_up(static_cast<double>(amax * static_cast<float>(1.0 / maxv)), false);
      inv = e == 0xFF ? qnan() : static_cast<float>(std::ldexp(1.0, 127 - e));
    }
    r.scale_codes.push_back(e);
    for (int i = 0; i < 32; ++i) r.codes.push_back(encode(f, xb[i] * inv, ties_away));
  }
  return r;
}

/// vLLM FP8 per tensor (quant_utils.cuh): q = fp8(x / scale).
inline result fp8_tensor(const std::vector<float>& x, const fdesc& f, float scale) {
  result r;
  r.tensor = scale;
  for (float v : x) r.codes.push_back(encode(f, v / scale));
  return r;
}

/// vLLM per-token-head (Triton), IEEE divisions; int8 truncates toward zero.
inline result per_token_head(const std::vector<float>& x, std::size_t head_dim, bool int8) {
  result r;
  const float qmax = int8 ? 127.0f : 448.0f, qmin = int8 ? -128.0f : -448.0f;
  for (std::size_t b = 0; b < x.size() / head_dim; ++b) {
    const float* xb = x.data() + head_dim * b;
    const float s = std::fmax(amax_fmaxf(xb, head_dim) / qmax, 1e-6f);
    r.scale_values.push_back(s);
    const float inv = 1.0f / s;
    for (std::size_t i = 0; i < head_dim; ++i) {
      float v = xb[i] * inv;
      if (!std::isnan(v)) v = std::min(std::max(v, qmin), qmax);
      if (int8) r.codes.push_back(std::isnan(v) ? 0 : static_cast<int>(std::trunc(v)) & 0xFF);
      else r.codes.push_back(encode(E4M3, v));
    }
  }
  return r;
}

/// KIVI group quantization in fp32 (new_pack.py, CUDA scalar division as reciprocal multiply).
inline result kivi(const std::vector<float>& x, std::size_t group, int bits) {
  result r;
  const int max_int = (1 << bits) - 1;
  for (std::size_t b = 0; b < x.size() / group; ++b) {
    const float* xb = x.data() + group * b;
    float mn = qnan(), mx = qnan();
    for (std::size_t i = 0; i < group; ++i) {
      if (std::isnan(xb[i])) continue;
      mn = std::isnan(mn) ? xb[i] : std::min(mn, xb[i]);
      mx = std::isnan(mx) ? xb[i] : std::max(mx, xb[i]);
    }
    const float s = (mx - mn) * (1.0f / static_cast<float>(max_int));
    r.scale_values.push_back(s);
    r.zeros.push_back(mn);
    for (std::size_t i = 0; i < group; ++i) {
      float q = (xb[i] - mn) / s;
      if (std::isnan(q)) {
        r.codes.push_back(0);
        continue;
      }
      q = std::min(std::max(q, 0.0f), static_cast<float>(max_int));
      r.codes.push_back(static_cast<int>(std::nearbyint(q)));  // default rounding mode: ties to even
    }
  }
  return r;
}

}  // namespace oracle
