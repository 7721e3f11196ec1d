// kvq/device.hpp — the device layer: Thrust algorithms over the KVQ_HD functors of the
// lower layers (any Thrust device system: CUDA, CPP, OMP, TBB), the GPU's conversion
// instructions, and CUDA kernels (included only by nvcc).
#pragma once

#include <kvq/config.hpp>
#include <kvq/device/system.hpp>
#include <kvq/device/hash.hpp>
#include <kvq/device/content_hash.hpp>
#include <kvq/device/functors.hpp>
#include <kvq/device/convert.hpp>
#include <kvq/device/cvt.hpp>
