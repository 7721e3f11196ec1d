/// \file
/// kvq/metrics.hpp — umbrella header of the metrics layer: rank and distribution
/// distortion between a reference softmax row p and an emulated one p̂.
#pragma once

#include <kvq/metrics/aggregate.hpp>
#include <kvq/metrics/distribution.hpp>
#include <kvq/metrics/logit_rank.hpp>
#include <kvq/metrics/needle.hpp>
#include <kvq/metrics/order.hpp>
#include <kvq/metrics/output.hpp>
#include <kvq/metrics/rank.hpp>
#include <kvq/metrics/topk.hpp>
#include <kvq/metrics/weighted_tau.hpp>
#include <kvq/metrics/workspace.hpp>
#include <kvq/metrics/suite.hpp>
