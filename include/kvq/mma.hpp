/// \file
/// kvq/mma.hpp — tensor-core inner-product models (block FMA, presets, chaining, host API).
#pragma once

#include <kvq/mma/api.hpp>
#include <kvq/mma/batch.hpp>
#include <kvq/mma/block_fma.hpp>
#include <kvq/mma/block_scale.hpp>
#include <kvq/mma/dot.hpp>
#include <kvq/mma/fast.hpp>
#include <kvq/mma/mfma.hpp>
#include <kvq/mma/params.hpp>
#include <kvq/mma/presets.hpp>
#include <kvq/mma/text.hpp>

/// \namespace kvq::mma
/// Models of the tensor-core inner product: the block FMA of an MMA instruction with its
/// alignment, truncation and accumulation rules (kvq/mma/block_fma.hpp), the named
/// instruction presets, dot products chained over K, the block-scaled Blackwell kinds
/// (kvq/mma/block_scale.hpp: tcgen05.mma kind::mxf8f6f4 / kind::mxf4nvf4, mma.sync
/// block_scale), the checked host API, and a faster evaluation of the unscaled rule with
/// the same bits (kvq/mma/fast.hpp, kvq/mma/batch.hpp).
