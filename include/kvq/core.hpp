/// \file
/// kvq/core.hpp — the core layer every other layer builds on: bit views and NaN tests,
/// 16-bit float rounding, deterministic elementary functions, fixed-shape reductions,
/// the matrix types, the error helper, the input-file check, the thread pool and the
/// atomic output-file writer.
#pragma once

#include <kvq/config.hpp>
#include <kvq/core/bits.hpp>
#include <kvq/core/float16.hpp>
#include <kvq/core/math.hpp>
#include <kvq/core/reduce.hpp>
#include <kvq/core/dot_block.hpp>
#include <kvq/core/dot_bound.hpp>
#include <kvq/core/math_array.hpp>
#include <kvq/core/matrix.hpp>
#include <kvq/core/error.hpp>
#include <kvq/core/input_file.hpp>
#include <kvq/core/parallel.hpp>
#include <kvq/core/prefetch.hpp>
#include <kvq/core/isa.hpp>
#include <kvq/core/atomic_file.hpp>

/// \namespace kvq::math
/// Deterministic elementary functions (exp, exp2, log, log2, sin, cos, ...) built only
/// from correctly rounded IEEE basic operations and bit manipulation, so that every
/// host and device compiler returns the same bits (kvq/core/math.hpp).

/// \namespace kvq::reduce
/// Sums, dot products and maxima in a fixed-shape pairwise tree that depends only on
/// the length, identical on every host, device and thread count (kvq/core/reduce.hpp).
