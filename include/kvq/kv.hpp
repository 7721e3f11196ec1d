// kvq/kv.hpp — KV tensors on Eigen, quantized KV caches with mixed-precision
// policies, and the KV memory planner.
#pragma once

#include <kvq/block.hpp>
#include <kvq/kv/tensor.hpp>
#include <kvq/kv/store.hpp>
#include <kvq/kv/cache.hpp>
#include <kvq/kv/planner.hpp>
#include <kvq/kv/registry.hpp>
