"""Static tensor types: shape, dtype and a layout tag, as every value in the graph IR carries."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Short names used in the text form (MLIR-like) and their numpy dtypes.
DTYPES: dict[str, np.dtype] = {
    "f16": np.dtype("float16"),
    "f32": np.dtype("float32"),
    "f64": np.dtype("float64"),
    "i8": np.dtype("int8"),
    "u8": np.dtype("uint8"),
    "i32": np.dtype("int32"),
    "i64": np.dtype("int64"),
    "bool": np.dtype("bool"),
}
_BY_NUMPY = {v: k for k, v in DTYPES.items()}

LAYOUTS = ("NCHW", "NHWC", "NCHWc")  # NCHWc: channels padded to a block and stored block-major (passes.nchwc)


def dtype_name(dtype: np.dtype | type | str) -> str:
    """Short dtype name ('f32') for a numpy dtype or a short name."""
    if isinstance(dtype, str) and dtype in DTYPES:
        return dtype
    d = np.dtype(dtype)
    if d not in _BY_NUMPY:
        raise TypeError(f"dtype {d} is not supported by the infopt IR; use one of {sorted(DTYPES)}")
    return _BY_NUMPY[d]


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
