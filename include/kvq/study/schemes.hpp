/// \file
/// kvq/study/schemes.hpp — the studies' view of the library's scheme registry
/// (kvq/kv/registry.hpp): which schemes a study compares by default, how a grid
/// parameter accepts scheme names (canonical names and their aliases, user-registered
/// schemes included), and which elements share a scale with an outlier channel.
/// Every round trip, description and bits-per-value rule comes from the registry.
#pragma once

#include <kvq/study/error.hpp>
#include <kvq/study/params.hpp>

#include <kvq/kv/registry.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace kvq::study {

using kvq::kv::kv_role;
using kvq::kv::scale_grouping;
/// A registered KV scheme (kvq/kv/registry.hpp), as the studies see it.
using scheme_spec = kvq::kv::scheme;

/// The eleven schemes the storage studies compare unless --schemes says otherwise.
inline std::vector<std::string> default_schemes() {
  return {"bf16",        "fp8_e4m3",    "fp8_e4m3_cal", "fp8_e5m2",         "fp8_per_token_head", "nvfp4_te",
          "nvfp4_vllm", "mxfp4_floor", "mxfp4_rceil",  "mxfp8_e4m3_rceil", "kivi_int4"};
}

/// Every scheme the registry knows now (built-ins and user schemes), canonical names.
inline std::vector<std::string> scheme_names() { return kvq::kv::scheme_names(); }

/// The registry's scheme called `name` (kvq::kv::find_scheme); an unknown name is a
/// usage_error, so a study's command line reports it in one line with exit code 2.
inline const scheme_spec& scheme_named(const std::string& name) {
  try {
    return kvq::kv::find_scheme(name);
  } catch (const std::invalid_argument& e) {
    throw usage_error(e.what());
  }
}

/// A grid parameter listing schemes: accepts canonical names and aliases, records the
/// canonical names (param::what == "scheme").
inline param scheme_param(std::string name, std::string full_default, std::string quick_default, std::string help) {
  return param{std::move(name), param_kind::name_list, std::move(full_default), std::move(quick_default),
               std::move(help), scheme_names(), 0, 0, "scheme"};
}

/// Effective block of a scheme along head_dim (per-token-head: the whole head_dim).
inline std::size_t row_block(const scheme_spec& s, std::size_t head_dim) { return s.block ? s.block : head_dim; }

/// head_dim must suit every chosen scheme (a multiple of its block size).
inline void check_head_dim(const std::vector<std::string>& schemes, long long head_dim) {
  for (const auto& n : schemes) {
    const scheme_spec& s = scheme_named(n);
    if (s.block_multiple && head_dim % static_cast<long long>(s.block) != 0)
      throw usage_error("--head-dim " + std::to_string(head_dim) + " is not a multiple of the block size " +
                        std::to_string(s.block) + " of scheme " + s.name + " (allowed: multiples of " +
                        std::to_string(s.block) + ", e.g. 64, 128, 256)");
  }
}

/// Does element (any token, channel c) of a `role` tensor share a scale with one of
/// the outlier channels?
inline bool shares_scale_with(const scheme_spec& s, kv_role role, std::size_t c, std::size_t head_dim,
                              const std::vector<std::size_t>& outlier_channels) {
  switch (s.grouping(role)) {
    case scale_grouping::none: return false;
    case scale_grouping::tensor: return true;
    case scale_grouping::channel: return false;
    case scale_grouping::row_blocks: {
      const std::size_t B = row_block(s, head_dim);
      for (auto o : outlier_channels)
        if (o / B == c / B && o != c) return true;
      return false;
    }
  }
  return false;
}

}  // namespace kvq::study
