// kvq/core.hpp — the core layer every other layer builds on: bit views and NaN tests,
// 16-bit float rounding, deterministic elementary functions, fixed-shape reductions,
// the matrix types and the error helper.
#pragma once

#include <kvq/config.hpp>
#include <kvq/core/bits.hpp>
#include <kvq/core/float16.hpp>
#include <kvq/core/math.hpp>
#include <kvq/core/reduce.hpp>
#include <kvq/core/matrix.hpp>
#include <kvq/core/error.hpp>
