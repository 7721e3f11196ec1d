/// \file
/// kvq/device.hpp — the device layer: Thrust algorithms over the KVQ_HD functors of the
/// lower layers (any Thrust device system: CUDA, CPP, OMP, TBB), the GPU's conversion
/// instructions, and CUDA kernels (included only by nvcc).
///
/// Not part of <kvq/kvq.hpp>: it needs Thrust (the CUDA toolkit's include/cccl) and, with
/// a host compiler, THRUST_DEVICE_SYSTEM set to THRUST_DEVICE_SYSTEM_CPP, _OMP or _TBB.
#pragma once

#include <kvq/config.hpp>
#include <kvq/device/system.hpp>
#include <kvq/device/hash.hpp>
#include <kvq/device/content_hash.hpp>
#include <kvq/device/functors.hpp>
#include <kvq/device/convert.hpp>
#include <kvq/device/cvt.hpp>
#include <kvq/device/block.hpp>
#include <kvq/device/nvfp4_lanes.hpp>
#include <kvq/device/math.hpp>
#include <kvq/device/reduce.hpp>
#include <kvq/device/attention.hpp>
#include <kvq/device/metrics.hpp>
// CUDA kernels (nvcc only): #include <kvq/device/nvfp4_kernel.cuh>
