/// \file
/// kvq/cost.hpp — the prefill cost model: GPU constants, model shapes, the roofline model
/// of prefill time with a quantized KV cache, its calibration.
#pragma once

#include <kvq/cost/gpu.hpp>
#include <kvq/cost/shape.hpp>
#include <kvq/cost/prefill.hpp>
#include <kvq/cost/calibration.hpp>
