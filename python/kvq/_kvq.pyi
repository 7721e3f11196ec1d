"""
Bit-exact emulation of low-precision KV-cache number formats (C++ extension of the kvq package).
"""

from collections.abc import Sequence
from typing import Any

import numpy
import numpy.typing


def fa3_fp8_attention(q: numpy.typing.ArrayLike, k: numpy.typing.ArrayLike, v: numpy.typing.ArrayLike, path: str = 'sm90', *, block_n: int | None = None, q_descale: float = 1.0, k_descale: float = 1.0, v_descale: float = 1.0, softmax_scale: float | None = None, max_offset: int = 8, threads: int = 1) -> numpy.typing.NDArray[numpy.float32]:
    """
    FlashAttention-3's FP8 forward (e4m3 Q, K, V and P; kvq::attention::fa3_fp8_attention) of every query row over all the keys (the decode step; no causal mask). q: (rows, head_dim) or (heads, rows, head_dim) float32; k, v: (tokens, head_dim) or (kv_heads, tokens, head_dim) float32, query head h reading K/V head h // (heads // kv_heads). Each input is quantized as fp8(x / descale) (values that are already e4m3 with descale 1 pass unchanged). path: 'ideal_fp32' (exact fp32 accumulation), 'sm90' (Hopper's fp8 tensor core, never promoted: FA3 as released) or 'sm90_promote_N' (P.V added into fp32 every N steps of 32 tokens). block_n: FA3's kBlockN (default: FA3's own choice for the head_dim); softmax_scale: default head_dim ** -0.5. Returns float32 outputs shaped like q. The heads run on `threads` threads; the bits do not depend on it.
    """

isa: str  # 'baseline' or 'x86-64-v3'

def cpu_supports_x86_64_v3() -> bool:
    """
    Whether this CPU runs the x86-64-v3 build (AVX2, FMA, F16C, BMI1/2, MOVBE).
    """

def formats() -> list[dict[str, Any]]:
    """
    The element formats and their properties: one dict per format (name, bits, bias, max_finite, min_normal, min_subnormal, specials, and what NaN, Inf, overflow and -0 encode to).
    """

def format_table() -> str:
    """The formats table as Markdown (what `kvq formats` prints)."""

def encode(x: numpy.typing.ArrayLike, format: str, rounding: str = 'nearest_even', overflow: str = 'satfinite', out: numpy.typing.NDArray[numpy.uint8] | None = None) -> numpy.typing.NDArray[numpy.uint8]:
    """
    Encode float32 or float64 values to codes of an element format (uint8, one code per element, right-aligned; same shape as x). rounding: nearest_even (rn, the GPU's cvt.rn), toward_zero (rz), up (ru), down (rd), nearest_away (rna). overflow: satfinite (PTX .satfinite) or nosat (Inf where the format has it, else NaN; formats without either saturate). A float64 input is rounded once, directly. out: a writable C-contiguous uint8 array of x's shape to write into (returned; nothing is allocated).
    """

def encode_stochastic(x: numpy.typing.ArrayLike, format: str, random_bits: numpy.typing.ArrayLike, overflow: str = 'satfinite') -> numpy.typing.NDArray[numpy.uint8]:
    """
    Stochastic rounding of float32 x with one caller-supplied uint32 per element: rounds away from zero iff frac32 + random_bits >= 2^32 (frac32: the discarded fraction of a quantum as 32-bit fixed point).
    """

def decode(codes: numpy.typing.ArrayLike, format: str, dtype: str = 'float32', out: numpy.typing.NDArray[numpy.floating] | None = None) -> numpy.typing.NDArray[numpy.floating]:
    """
    Exact values of uint8 codes of an element format (bits above the format's width are ignored); NaN codes decode to a quiet NaN with the code's sign. out: a writable C-contiguous array of dtype `dtype` and the codes' shape to write into (returned; nothing is allocated).
    """

def schemes(all: bool = False) -> list[str]:
    """
    Names of the block quantization schemes (the ones quantize, dequantize and verify accept). all=True: every name of the scheme registry, in its order: the high-precision formats (bf16, fp16, fp32), the block schemes and the KIVI zero-point schemes (which quantize and dequantize accept, verify does not).
    """

def write_file_atomic(path: str, data: bytes) -> None:
    """
    Write data to path as one unit with the library's one atomic writer (kvq/core/atomic_file.hpp): an exclusively created temporary file beside path, synced and renamed over it; a character device or FIFO is written directly. Raises ValueError for a target it refuses (a symbolic link, a directory) and RuntimeError naming the path when the write fails.
    """

def calibrate(x: numpy.typing.ArrayLike, scheme: str, role: str = 'key') -> float | None:
    """
    The tensor value a kvq KV cache fixes for `scheme` when x (all heads of one layer's K or V) is the first chunk it stores, by the registry's rule: None (no tensor value), 1.0 (unit, e.g. fp8_e4m3), vLLM calc_kv_scales amax/200 (key) or amax/100 (value) for the calibrated FP8 schemes, or the recipe's own rule from the amax (NVFP4). Pass it to quantize as tensor_value.
    """

def describe(name: str) -> dict[str, Any]:
    """
    A block scheme's properties: recipe, source, storage_bits, block_size (None: the row), scale dtype, tensor value meaning, exactness, element format.
    """

def bits_per_value(name: str, head_dim: int = 128) -> float:
    """
    Stored bits per cached value of the scheme at head dimension head_dim, by the registry's one rule (block scales and zero points included, the single tensor value and KIVI's full-precision window excluded; high-precision formats: their width). The number `kvq memory` prints. Raises ValueError if the block or group size does not divide head_dim.
    """

def quantize(x: numpy.typing.ArrayLike, scheme: str, tensor_value: float | None = None, out: tuple[Any, ...] | None = None, threads: int = 1) -> tuple[numpy.typing.NDArray[numpy.uint8], numpy.typing.NDArray[Any] | None, float | numpy.typing.NDArray[numpy.float32] | None]:
    """
    Quantize x (float32, or float16/bfloat16 through the recipe's 16-bit input path; any shape, blocks run along the last dimension) with a block scheme. Returns (codes, scales, tensor_value) in the kernel layout: codes uint8 with shape x.shape[:-1] + (row * bits / 8,) (4-bit elements two per byte, element 2i in the low nibble); scales one per block, shape x.shape[:-1] + (row / block,), uint8 codes (NVFP4: e4m3, MX: ue8m0) or float32, or None; tensor_value the fp32 tensor-level value used (unless given: 1.0 for schemes whose registry rule is unit, such as fp8_e4m3, else computed from x as the recipe does), or None. Zero-point schemes (KIVI, kvq::block::kivi_group): groups of `group` (32) consecutive elements along the last dimension (KIVI's values: pass (..., tokens, head_dim); its keys, grouped along tokens: pass the transpose (..., head_dim, tokens)), float32 scales (max - min) / (2^bits - 1), and the third value is the zero points (the group minima), float32 with the scales' shape. out: (codes, scales) arrays of those shapes and dtypes to write into (scales None for schemes without block scales; zero-point schemes: (codes, scales, zero points)); they are returned in the result tuple and nothing is allocated. threads: blocks split over this many threads (kvq::block::quantize_parallel; the tensor amax is combined exactly), the same bits for every count.
    """

def dequantize(codes: numpy.typing.ArrayLike, scales: numpy.typing.ArrayLike | None, scheme: str, tensor_value: float | numpy.typing.ArrayLike | None = None, out: numpy.typing.NDArray[numpy.float32] | None = None, threads: int = 1) -> numpy.typing.NDArray[numpy.float32]:
    """
    Dequantize the buffers quantize returns into float32 of shape codes.shape[:-1] + (row,). For zero-point schemes (KIVI) tensor_value is the zero points array (quantize's third value). out: a writable C-contiguous float32 array of the result's shape to write into (returned). threads: as in quantize (kvq::block::dequantize_parallel), the same bits for every count.
    """

class Mismatch:
    """One differing element of a verification."""

    @property
    def index(self) -> int:
        """flat element (or block) index"""

    @property
    def input(self) -> object:
        """the input value, or None (scales)"""

    @property
    def expected_bits(self) -> int:
        """kvq's element (code, scale byte, float bits)"""

    @property
    def actual_bits(self) -> int:
        """the caller's element"""

    @property
    def expected_value(self) -> float:
        """kvq's element decoded"""

    @property
    def actual_value(self) -> float:
        """the caller's element decoded"""

    def __repr__(self) -> str: ...

class Comparison:
    """A bit-for-bit comparison of one buffer (codes or scales)."""

    @property
    def name(self) -> str: ...

    @property
    def elements(self) -> int:
        """elements compared"""

    @property
    def mismatches(self) -> int:
        """elements that differ"""

    @property
    def first(self) -> list[Mismatch]:
        """the first mismatches, by index"""

    @property
    def ok(self) -> bool: ...

    @property
    def expected_hash(self) -> str:
        """FNV-1a 64 of kvq's buffer"""

    @property
    def actual_hash(self) -> str:
        """FNV-1a 64 of the caller's buffer"""

    def __str__(self) -> str: ...

    def __repr__(self) -> str: ...

class ElementMismatch:
    """
    One mismatching element of a block scheme, explained: the fields are the columns of `kvq verify --dump` (class is `mismatch_class`).
    """

    @property
    def index(self) -> int:
        """flat element index"""

    @property
    def block(self) -> int:
        """flat block index"""

    @property
    def block_row(self) -> int:
        """row of the block"""

    @property
    def block_col(self) -> int:
        """block within its row"""

    @property
    def mismatch_class(self) -> str:
        """
        'scale' (the block's scale differs), 'element' (same scale, other code) or 'nan' (NaN bits)
        """

    @property
    def input(self) -> float:
        """the element as the recipe loaded it"""

    @property
    def block_amax(self) -> float:
        """kvq's block amax"""

    @property
    def unrounded_scale(self) -> float:
        """kvq's fp32 scale before its cast"""

    @property
    def kvq_scale_code(self) -> int:
        """kvq's stored scale bits"""

    @property
    def kernel_scale_code(self) -> int:
        """the kernel's stored scale bits"""

    @property
    def kvq_scale(self) -> float:
        """kvq's scale, decoded"""

    @property
    def kernel_scale(self) -> float:
        """the kernel's scale, decoded"""

    @property
    def scaled(self) -> float:
        """kvq's element before its cast (x times the inverse scale)"""

    @property
    def kvq_code(self) -> int:
        """kvq's code"""

    @property
    def kernel_code(self) -> int:
        """the kernel's code"""

    @property
    def kvq_value(self) -> float:
        """kvq's code decoded"""

    @property
    def kernel_value(self) -> float:
        """the kernel's code decoded"""

    def __repr__(self) -> str: ...

class ScaleMismatch:
    """One block whose stored scale differs."""

    @property
    def block(self) -> int:
        """flat block index"""

    @property
    def block_row(self) -> int:
        """row of the block"""

    @property
    def block_col(self) -> int:
        """block within its row"""

    @property
    def nan_only(self) -> bool:
        """both scales decode to NaN"""

    @property
    def block_amax(self) -> float:
        """kvq's block amax"""

    @property
    def unrounded_scale(self) -> float:
        """kvq's fp32 scale before its cast"""

    @property
    def kvq_scale_code(self) -> int:
        """kvq's stored scale bits"""

    @property
    def kernel_scale_code(self) -> int:
        """the kernel's stored scale bits"""

    @property
    def kvq_scale(self) -> float:
        """kvq's scale, decoded"""

    @property
    def kernel_scale(self) -> float:
        """the kernel's scale, decoded"""

    @property
    def code_mismatches(self) -> int:
        """code mismatches in the block (class scale)"""

class Explanation:
    """
    Every mismatch of a block scheme explained and classed, with a summary by class (what `kvq verify` prints under 'explanation').
    """

    @property
    def scheme(self) -> str: ...

    @property
    def elements(self) -> int:
        """elements compared"""

    @property
    def blocks(self) -> int: ...

    @property
    def block_size(self) -> int: ...

    @property
    def blocks_per_row(self) -> int: ...

    @property
    def scale_blocks(self) -> int:
        """blocks whose scale differs (not NaN-only)"""

    @property
    def scale_consequences(self) -> int:
        """code mismatches in those blocks"""

    @property
    def element_errors(self) -> int:
        """code mismatches of class element"""

    @property
    def nan_codes(self) -> int:
        """codes differing only in NaN bits"""

    @property
    def nan_scales(self) -> int:
        """scales differing only in NaN bits"""

    @property
    def mismatches(self) -> list[ElementMismatch]:
        """every mismatching element (ElementMismatch)"""

    @property
    def scale_mismatches(self) -> list[ScaleMismatch]:
        """every block whose scale differs (ScaleMismatch)"""

    def __str__(self) -> str: ...

class Report:
    """
    Result of kvq.verify: truthy `ok`; str() is what `kvq verify` prints (the first mismatches with positions, the hashes and, for block schemes, the explanation of every mismatch), repr() one line, so `assert r.ok, r` in pytest shows the problem.
    """

    @property
    def scheme(self) -> str:
        """canonical scheme name"""

    @property
    def shape(self) -> list[int]: ...

    @property
    def ok(self) -> bool: ...

    @property
    def codes(self) -> Comparison:
        """the codes comparison"""

    @property
    def scales(self) -> object:
        """the scales comparison, or None for schemes without block scales"""

    @property
    def code_mismatches(self) -> int: ...

    @property
    def scale_mismatches(self) -> int: ...

    @property
    def tensor_value(self) -> object:
        """the tensor value kvq used, or None"""

    @property
    def explanation(self) -> object:
        """
        block schemes that differ: the Explanation of every mismatch, else None
        """

    @property
    def matches(self) -> list[str]:
        """
        on a mismatch: the other schemes of the same format (element format, scale format, block size) whose codes and scales equal the kernel's exactly, i.e. the operation order the kernel follows; empty when none does or when the output matched
        """

    @property
    def mismatches(self) -> list[ElementMismatch]:
        """
        every mismatching element explained (ElementMismatch; empty when all match or for element formats)
        """

    def to_csv(self) -> str:
        """
        The mismatches as the CSV `kvq verify --dump` writes (the header only when all match).
        """

    def dump(self, path: str) -> None:
        """Write to_csv() to path, atomically, as `kvq verify --dump path` does."""

    def __bool__(self) -> bool: ...

    def __str__(self) -> str: ...

    def __repr__(self) -> str: ...

def hard_inputs(scheme: str, shape: Sequence[int], seed: int = 1) -> numpy.typing.NDArray[numpy.float32]:
    """
    A float32 array of `shape` (C order; the last dimension is the row, a multiple of the scheme's block size) that separates every rounding decision of the scheme's recipe: elements exactly on the element format's rounding midpoints after the recipe's own scaling, block amaxes on both sides of every scale boundary (e4m3 midpoints, powers of two), zero and subnormal blocks, NaN/Inf where the recipe defines them, and (two-level recipes) the tensor amax. A kernel that rounds ties away from zero, truncates, divides instead of multiplying by a reciprocal or rounds its scale the other way matches kvq on random input but not on these. Deterministic in (scheme, shape, seed). See kvq/verify/hard_inputs.hpp.
    """

def verify(scheme: str, x: numpy.typing.ArrayLike, codes: numpy.typing.ArrayLike, scales: numpy.typing.ArrayLike | None = None, tensor_value: float | None = None, rounding: str | None = None, overflow: str | None = None, max_listed: int = 10, scale_layout: str = 'rowmajor', input_layout: str = 'nhd', kernel_layout: str = 'nhd', page_layout: str = 'none') -> Report:
    """
    Compare a kernel's codes (and block scales) with kvq's, bit for bit, through the library's one verification entry point (what `kvq verify` runs). scheme: a block scheme (kvq.schemes()) or an element format (kvq.formats(); then rounding (default nearest_even) and overflow (default satfinite) apply and scales is None; block schemes refuse them). x: float32, float16 or bfloat16. Codes may be packed as quantize returns them or, for 4-bit elements, one code per byte. tensor_value: the tensor-level value the kernel used (default: the scheme's rule, 1.0 for fp8_e4m3, else computed from x as the recipe does). scale_layout: 'rowmajor' or 'swizzled128x4' (cuBLAS / TransformerEngine 128x4 tiles of uint8 scales). input_layout / kernel_layout: 'nhd' ([..., tokens, heads, dim]) or 'hnd' ([..., heads, tokens, dim]), the order of x and of the kernel's buffers; when they differ the buffers are read in x's order. page_layout: 'vllm_nvfp4_k' or 'vllm_nvfp4_v': codes is vLLM's NVFP4 KV cache (both sides, codes and scales per page, V scales interleaved over 4 tokens), x is [pages, page_size, heads, head_size], scales is None and kernel_layout is the pages' row order. Mismatches are explained with the columns of `kvq verify --dump` (Report.mismatches, to_csv(), and each listed row of str()).
    """

def swizzle_scales(scales: numpy.typing.ArrayLike, rows: int, cols: int) -> numpy.typing.NDArray[numpy.uint8]:
    """
    A row-major rows x cols uint8 scale matrix (any shape with rows * cols elements) in cuBLAS / TransformerEngine's swizzled 128x4 tile layout: a flat array padded with zeros to whole 128x4 tiles, scale (r, c) of a tile at (r % 32) * 16 + (r // 32) * 4 + c. See kvq/verify/scale_layout.hpp.
    """

def unswizzle_scales(scales: numpy.typing.ArrayLike, rows: int, cols: int) -> numpy.typing.NDArray[numpy.uint8]:
    """
    The inverse of swizzle_scales: the swizzled 128x4 tiles (a uint8 array of swizzled size, padding included) back to the row-major rows x cols scale matrix, padding dropped.
    """
