// tests/gpu/cuda_check.hpp — CUDA runtime error checking for the GPU driver.
#pragma once

#include <cstdio>
#include <cstdlib>

#include <cuda_runtime.h>

#define KVQ_CUDA_CHECK(expr)                                                                      \
  do {                                                                                            \
    const cudaError_t kvq_err_ = (expr);                                                          \
    if (kvq_err_ != cudaSuccess) {                                                                \
      std::fprintf(stderr, "CUDA error %s (%s) at %s:%d: %s\n", cudaGetErrorName(kvq_err_),       \
                   cudaGetErrorString(kvq_err_), __FILE__, __LINE__, #expr);                      \
      std::exit(3);                                                                               \
    }                                                                                             \
  } while (0)
