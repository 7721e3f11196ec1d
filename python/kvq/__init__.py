"""kvq: bit-exact emulation of the low-precision number formats of LLM KV caches.

Element formats (FP8 E4M3/E5M2 and their fnuz variants, FP6 E3M2/E2M3, FP4 E2M1,
UE8M0/UE4M3 scales) convert exactly as NVIDIA GPUs' ``cvt`` instructions do; block
schemes (NVFP4, OCP MX, FP8 KV stores) reproduce named reference recipes
(TransformerEngine, torchao, vLLM) bit for bit, in the buffer layout kernels write.

Arrays: NumPy arrays or anything that speaks DLPack (PyTorch CPU tensors). A
C-contiguous array of the expected dtype is read in place; results are NumPy arrays.
"""

from ._kvq import (
    Comparison,
    Mismatch,
    Report,
    bits_per_value,
    decode,
    dequantize,
    describe,
    encode,
    encode_stochastic,
    format_table,
    formats,
    quantize,
    schemes,
    verify,
)

__version__ = "0.1.0"

__all__ = [
    "Comparison",
    "Mismatch",
    "Report",
    "bits_per_value",
    "decode",
    "dequantize",
    "describe",
    "encode",
    "encode_stochastic",
    "format_table",
    "formats",
    "quantize",
    "schemes",
    "verify",
]
