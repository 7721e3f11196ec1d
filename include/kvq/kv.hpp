/// \file
/// kvq/kv.hpp — KV tensors on Eigen, quantized KV caches with mixed-precision
/// policies, and the KV memory planner.
#pragma once

#include <kvq/block.hpp>
#include <kvq/kv/tensor.hpp>
#include <kvq/kv/store.hpp>
#include <kvq/kv/cache.hpp>
#include <kvq/kv/planner.hpp>
#include <kvq/kv/registry.hpp>

/// \namespace kvq::kv
/// The KV layer: K/V tensors on Eigen, per-layer quantized KV caches with
/// mixed-precision policies, row stores per scheme, and THE scheme registry
/// (kvq::kv::find_scheme, kvq::kv::canonical_name, kvq::kv::scheme_names).
