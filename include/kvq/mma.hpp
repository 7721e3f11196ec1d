// kvq/mma.hpp — tensor-core inner-product models (block FMA, presets, chaining, host API).
#pragma once

#include <kvq/mma/api.hpp>
#include <kvq/mma/block_fma.hpp>
#include <kvq/mma/dot.hpp>
#include <kvq/mma/params.hpp>
#include <kvq/mma/presets.hpp>
