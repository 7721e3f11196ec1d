/// \file
/// kvq/inject.hpp — umbrella header of the synthetic-data layer: counter-based RNG,
/// Gaussian Q/K/V with heads, RoPE, and the outlier / massive-activation / sink / needle
/// injectors with their records.
#pragma once

#include <kvq/inject/philox.hpp>
#include <kvq/inject/random.hpp>
#include <kvq/inject/normal_array.hpp>
#include <kvq/core/error.hpp>
#include <kvq/core/matrix.hpp>
#include <kvq/inject/generate.hpp>
#include <kvq/inject/rope_row.hpp>
#include <kvq/inject/rope.hpp>
#include <kvq/inject/patterns.hpp>
#include <kvq/inject/scenario.hpp>
