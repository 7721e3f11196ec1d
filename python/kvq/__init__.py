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

from ._native import ext as _ext

# The build for this CPU (kvq/_native.py: baseline x86-64, x86-64-v3 or AVX-512, the same bits).
Comparison = _ext.Comparison
ElementMismatch = _ext.ElementMismatch
Explanation = _ext.Explanation
Mismatch = _ext.Mismatch
Report = _ext.Report
ScaleMismatch = _ext.ScaleMismatch
bits_per_value = _ext.bits_per_value
calibrate = _ext.calibrate
decode = _ext.decode
dequantize = _ext.dequantize
describe = _ext.describe
encode = _ext.encode
encode_stochastic = _ext.encode_stochastic
fa3_fp8_attention = _ext.fa3_fp8_attention
format_table = _ext.format_table
formats = _ext.formats
hard_inputs = _ext.hard_inputs
quantize = _ext.quantize
schemes = _ext.schemes
swizzle_scales = _ext.swizzle_scales
unswizzle_scales = _ext.unswizzle_scales
verify = _ext.verify
write_file_atomic = _ext.write_file_atomic
isa = _ext.isa

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
    "isa",
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
