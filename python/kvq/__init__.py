"""kvq: bit-exact emulation of the low-precision number formats of LLM KV caches.

Element formats (FP8 E4M3/E5M2 and their fnuz variants, FP6 E3M2/E2M3, FP4 E2M1,
UE8M0/UE4M3 scales) convert exactly as NVIDIA GPUs' ``cvt`` instructions do; block
schemes (NVFP4, OCP MX, FP8 KV stores) reproduce named reference recipes
(TransformerEngine, torchao, vLLM) bit for bit, in the buffer layout kernels write.

Arrays: NumPy arrays or anything that speaks DLPack (PyTorch CPU tensors). A
C-contiguous array of the expected dtype is read in place; results are NumPy arrays.

``kvq.capture`` records the Q, K and V of a Hugging Face ``transformers`` model in kvq's
KV file format (it needs torch, and safetensors for .safetensors files; neither is
imported until it is called). ``kvq.run_study`` runs the studies of the ``kvq`` command
and returns their tables as NumPy columns (``run_study("model", ...)``: the decoder
study of ``kvq.model_study``, which needs torch and transformers).
``kvq.torch`` (imported on request) stores a ``transformers`` model's KV cache with any
scheme of the registry.
"""

from ._kvq import (
    Comparison,
    ElementMismatch,
    Explanation,
    Mismatch,
    Report,
    ScaleMismatch,
    bits_per_value,
    calibrate,
    decode,
    dequantize,
    describe,
    encode,
    encode_stochastic,
    fa3_fp8_attention,
    format_table,
    formats,
    hard_inputs,
    quantize,
    schemes,
    swizzle_scales,
    unswizzle_scales,
    verify,
    write_file_atomic,
)
from .capture import capture, load_capture
from .study import run_study, studies

__version__ = "0.1.0"

__all__ = [
    "Comparison",
    "ElementMismatch",
    "Explanation",
    "Mismatch",
    "Report",
    "ScaleMismatch",
    "bits_per_value",
    "calibrate",
    "capture",
    "decode",
    "dequantize",
    "describe",
    "encode",
    "encode_stochastic",
    "fa3_fp8_attention",
    "format_table",
    "formats",
    "hard_inputs",
    "load_capture",
    "quantize",
    "run_study",
    "schemes",
    "studies",
    "swizzle_scales",
    "unswizzle_scales",
    "verify",
    "write_file_atomic",
]
