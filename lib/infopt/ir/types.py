"""Static tensor types: shape, dtype and a layout tag, as every value in the graph IR carries.

The dtypes are ONNX's numeric ones that numpy can hold: floats (f16, bf16, f32, f64), signed and unsigned
integers of 8 to 64 bits, and bool. bfloat16 comes from ``ml_dtypes`` (installed with onnx), imported only
when a bf16 value is first met, so ``import infopt.ir`` stays cheap.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Mapping

import numpy as np

from .errors import GraphError

FLOAT_DTYPES = ("f16", "bf16", "f32", "f64")
SIGNED_DTYPES = ("i8", "i16", "i32", "i64")
UNSIGNED_DTYPES = ("u8", "u16", "u32", "u64")
INT_DTYPES = SIGNED_DTYPES + UNSIGNED_DTYPES
NUMERIC_DTYPES = FLOAT_DTYPES + INT_DTYPES

_NUMPY_NAMES = {
    "f16": "float16", "f32": "float32", "f64": "float64", "i8": "int8", "i16": "int16", "i32": "int32",
    "i64": "int64", "u8": "uint8", "u16": "uint16", "u32": "uint32", "u64": "uint64", "bool": "bool",
}


def _bfloat16() -> np.dtype:
    import ml_dtypes  # noqa: PLC0415  (a dependency of onnx; imported on first use of bf16)

    return np.dtype(ml_dtypes.bfloat16)


class _DtypeTable(Mapping[str, np.dtype]):
    """Short dtype name -> numpy dtype; bf16 is resolved on first access (it needs ml_dtypes)."""

    def __init__(self) -> None:
        self._names = ("f16", "bf16", "f32", "f64", "i8", "u8", "i16", "u16", "i32", "u32", "i64", "u64", "bool")
        self._known = {k: np.dtype(v) for k, v in _NUMPY_NAMES.items()}

    def __getitem__(self, key: str) -> np.dtype:
        if key == "bf16" and "bf16" not in self._known:
            self._known["bf16"] = _bfloat16()
        return self._known[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __contains__(self, key: object) -> bool:
        return key in self._names


# Short names used in the text form (MLIR-like) and their numpy dtypes.
DTYPES: Mapping[str, np.dtype] = _DtypeTable()
_BY_NUMPY_NAME = {v: k for k, v in _NUMPY_NAMES.items()} | {"bfloat16": "bf16"}

# ONNX TensorProto.DataType codes <-> the IR's short dtype names (every ONNX dtype numpy can hold).
ONNX_DTYPES: dict[int, str] = {
    1: "f32", 2: "u8", 3: "i8", 4: "u16", 5: "i16", 6: "i32", 7: "i64", 9: "bool", 10: "f16", 11: "f64",
    12: "u32", 13: "u64", 16: "bf16",
}
ONNX_CODES: dict[str, int] = {v: k for k, v in ONNX_DTYPES.items()}
# The names of all ONNX element types (for messages about the ones the IR does not hold).
ONNX_DTYPE_NAMES: dict[int, str] = {
    0: "UNDEFINED", 1: "FLOAT", 2: "UINT8", 3: "INT8", 4: "UINT16", 5: "INT16", 6: "INT32", 7: "INT64", 8: "STRING",
    9: "BOOL", 10: "FLOAT16", 11: "DOUBLE", 12: "UINT32", 13: "UINT64", 14: "COMPLEX64", 15: "COMPLEX128",
    16: "BFLOAT16", 17: "FLOAT8E4M3FN", 18: "FLOAT8E4M3FNUZ", 19: "FLOAT8E5M2", 20: "FLOAT8E5M2FNUZ", 21: "UINT4",
    22: "INT4", 23: "FLOAT4E2M1", 24: "FLOAT8E8M0", 25: "UINT2", 26: "INT2",
}


def onnx_dtype(code: int, where: str) -> str:
    """The IR dtype of ONNX element type ``code``, or a GraphError naming the type and the dtypes the IR holds."""
    if code in ONNX_DTYPES:
        return ONNX_DTYPES[code]
    name = ONNX_DTYPE_NAMES.get(int(code), f"code {code}")
    raise GraphError(
        f"{where}: ONNX element type {name} is not supported by the infopt IR, which holds "
        f"{', '.join(ONNX_DTYPE_NAMES[c] for c in sorted(ONNX_DTYPES))} (numpy's types). Cast the value to one of "
        "them in the model first."
    )

LAYOUTS = ("NCHW", "NHWC", "NCHWc")  # NCHWc: channels padded to a block and stored block-major (passes.nchwc)


def dtype_name(dtype: np.dtype | type | str) -> str:
    """Short dtype name ('f32') for a numpy dtype or a short name."""
    if isinstance(dtype, str) and dtype in DTYPES:
        return dtype
    try:
        d = np.dtype(dtype)
    except TypeError:
        d = None
    if d is None or d.name not in _BY_NUMPY_NAME:
        raise TypeError(f"dtype {d if d is not None else dtype} is not supported by the infopt IR; use one of "
                        f"{sorted(DTYPES)}")
    return _BY_NUMPY_NAME[d.name]


def is_float(dtype: np.dtype | str) -> bool:
    """True for the floating-point dtypes (f16, bf16, f32, f64), given as a numpy dtype or a short name."""
    name = dtype if isinstance(dtype, str) else np.dtype(dtype).name
    return name in FLOAT_DTYPES or name in ("float16", "bfloat16", "float32", "float64")


@dataclass(frozen=True)
class TensorType:
    """The static type of a value: a fully known shape, a dtype ('f32'...) and an optional layout tag."""

    shape: tuple[int, ...]
    dtype: str = "f32"
    layout: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "shape", tuple(int(d) for d in self.shape))
        object.__setattr__(self, "dtype", dtype_name(self.dtype))
        if any(d < 0 for d in self.shape):
            raise ValueError(f"negative dimension in shape {self.shape}")
        if self.layout is not None and self.layout not in LAYOUTS:
            raise ValueError(f"unknown layout tag {self.layout!r}; use one of {LAYOUTS} or None")

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def numpy_dtype(self) -> np.dtype:
        return DTYPES[self.dtype]

    @property
    def size(self) -> int:
        """Number of elements."""
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.numpy_dtype.itemsize

    def with_shape(self, shape: tuple[int, ...]) -> "TensorType":
        return TensorType(tuple(shape), self.dtype, self.layout)

    @classmethod
    def of(cls, array: np.ndarray, layout: str | None = None) -> "TensorType":
        """The type of a numpy array."""
        array = np.asarray(array)
        return cls(array.shape, dtype_name(array.dtype), layout)

    def __str__(self) -> str:
        dims = ",".join(str(d) for d in self.shape)
        tag = f" {self.layout}" if self.layout else ""
        return f"{self.dtype}[{dims}]{tag}"
