"""The accelerator's configuration (array size, dataflow, number format, SRAM and DMA) and its error type."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

DATAFLOWS = ("ws", "os")
"""Weight-stationary (weights sit in the PEs, inputs stream) and output-stationary (outputs sit in the PEs)."""

# operand dtype -> accumulator dtype
FORMATS: dict[str, tuple[np.dtype, np.dtype]] = {
    "int8": (np.dtype(np.int8), np.dtype(np.int32)),
    "float32": (np.dtype(np.float32), np.dtype(np.float32)),
}


class AccelError(ValueError):
    """Bad input for the accelerator: a shape, dtype or command it cannot take; the message names it."""


@dataclass(frozen=True)
class AccelConfig:
    """An R x C systolic array with its dataflow, number format, three SRAM buffers and a DMA engine.

    SRAM sizes are in bytes; addresses in commands are byte addresses inside one buffer.
    A DMA transfer of ``b`` bytes costs ``dma_setup_cycles + ceil(b / dma_bytes_per_cycle)`` cycles.
    """

    rows: int = 4
    cols: int = 4
    dataflow: str = "ws"
    dtype: str = "int8"
    in_sram_bytes: int = 256 * 1024
    wt_sram_bytes: int = 64 * 1024
    out_sram_bytes: int = 64 * 1024
    dma_bytes_per_cycle: int = 16
    dma_setup_cycles: int = 0

    def __post_init__(self) -> None:
        for name in ("rows", "cols", "in_sram_bytes", "wt_sram_bytes", "out_sram_bytes", "dma_bytes_per_cycle"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or v < 1:
                raise AccelError(f"AccelConfig.{name} must be a positive integer, got {v!r}")
        if self.dma_setup_cycles < 0:
            raise AccelError(f"AccelConfig.dma_setup_cycles must be >= 0, got {self.dma_setup_cycles}")
        if self.dataflow not in DATAFLOWS:
            raise AccelError(f"unknown dataflow {self.dataflow!r}; use one of {DATAFLOWS}")
        if self.dtype not in FORMATS:
            raise AccelError(
                f"unsupported accelerator dtype {self.dtype!r}; the array supports {sorted(FORMATS)} "
                "(int8 operands accumulate in int32, float32 in float32)"
            )

    @property
    def operand_dtype(self) -> np.dtype:
        """The dtype of inputs and weights (int8 or float32)."""
        return FORMATS[self.dtype][0]

    @property
    def acc_dtype(self) -> np.dtype:
        """The dtype of the accumulators and the output buffer (int32 or float32)."""
        return FORMATS[self.dtype][1]

    def buffer_dtype(self, buf: str) -> np.dtype:
        """The element dtype of SRAM buffer ``buf`` ('in', 'wt' or 'out')."""
        check_buffer(buf)
        return self.acc_dtype if buf == "out" else self.operand_dtype

    def buffer_bytes(self, buf: str) -> int:
        """The capacity of SRAM buffer ``buf`` in bytes."""
        check_buffer(buf)
        return {"in": self.in_sram_bytes, "wt": self.wt_sram_bytes, "out": self.out_sram_bytes}[buf]

    def replace(self, **changes) -> "AccelConfig":
        """A copy with some fields changed."""
        from dataclasses import replace

        return replace(self, **changes)


BUFFERS = ("in", "wt", "out")


def check_buffer(buf: str) -> str:
    """Return ``buf`` if it names an SRAM buffer, else raise an AccelError naming the choices."""
    if buf not in BUFFERS:
        raise AccelError(f"unknown SRAM buffer {buf!r}; the accelerator has {BUFFERS}")
    return buf


def as_operand(x: np.ndarray, config: AccelConfig, what: str) -> np.ndarray:
    """``x`` as the array's operand dtype, or an AccelError if its dtype does not match the config."""
    x = np.asarray(x)
    want = config.operand_dtype
    if x.dtype != want:
        raise AccelError(
            f"{what} has dtype {x.dtype} but the accelerator is configured for {config.dtype} operands; "
            f"convert it (e.g. x.astype(np.{want})) or use AccelConfig(dtype=...) for the other format"
        )
    return x
