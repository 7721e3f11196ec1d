/// \file
/// kvq/attention.hpp — umbrella header of the attention layer: deterministic math and
/// reductions, bf16 rounding, Hadamard rotation, per-query kernels (double reference,
/// storage-only emulation, FlashAttention-3 FP8), the host paths and the query driver.
#pragma once

#include <kvq/core/math.hpp>
#include <kvq/core/reduce.hpp>
#include <kvq/core/float16.hpp>
#include <kvq/attention/hadamard.hpp>
#include <kvq/attention/kernels.hpp>
#include <kvq/attention/weights_batch.hpp>
#include <kvq/attention/fa3_tiles.hpp>
#include <kvq/attention/block_descale.hpp>
#include <kvq/attention/codec.hpp>
#include <kvq/attention/variants.hpp>
#include <kvq/attention/fa3_path.hpp>
#include <kvq/attention/nvfp4_path.hpp>
#include <kvq/attention/driver.hpp>
