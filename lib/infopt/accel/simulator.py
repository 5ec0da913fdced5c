"""The simulated accelerator: SRAM buffers, a DMA engine and the array, running a command stream against DRAM tensors."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .array import run_tile
from .config import BUFFERS, AccelConfig, AccelError
from .cycles import command_bytes, dma_cycles
from .isa import Command, DmaLoad, DmaStore, MatMul, Program
from .tile import check_tile


@dataclass
class CommandStat:
    """What one command cost: its index, assembly text, cycles, bytes moved and useful MACs."""

    index: int
    text: str
    cycles: int
    dma_bytes: int = 0
    macs: int = 0


@dataclass
class RunStats:
    """Totals of one program run, and per-command detail (plus per-tile traces in trace mode)."""

    config: AccelConfig
    cycles: int = 0
    compute_cycles: int = 0
    dma_cycles: int = 0
    macs: int = 0
    dma_bytes_in: int = 0
    dma_bytes_out: int = 0
    commands: list = field(default_factory=list)
    traces: list = field(default_factory=list)

    @property
    def dma_bytes(self) -> int:
        """Bytes moved between DRAM and SRAM in both directions."""
        return self.dma_bytes_in + self.dma_bytes_out

    @property
    def utilization(self) -> float:
        """Useful MACs / (PEs x all cycles), DMA time included."""
        return self.macs / (self.config.rows * self.config.cols * max(self.cycles, 1))

    @property
    def compute_utilization(self) -> float:
        """Useful MACs / (PEs x cycles spent in MATMUL commands)."""
        return self.macs / (self.config.rows * self.config.cols * max(self.compute_cycles, 1))

    def summary(self) -> dict:
        """The totals as a plain dict (for tables and JSON)."""
        return {
            "cycles": self.cycles, "compute_cycles": self.compute_cycles, "dma_cycles": self.dma_cycles,
            "macs": self.macs, "utilization": round(self.utilization, 4),
            "compute_utilization": round(self.compute_utilization, 4),
            "dma_bytes_in": self.dma_bytes_in, "dma_bytes_out": self.dma_bytes_out,
        }


class Sram:
    """The three on-chip buffers ('in', 'wt', 'out') as raw bytes, read and written as typed tiles."""

    def __init__(self, config: AccelConfig) -> None:
        self.config = config
        self.bytes = {b: np.zeros(config.buffer_bytes(b), dtype=np.uint8) for b in BUFFERS}

    def tile(self, buf: str, addr: int, shape: tuple[int, int], where: str) -> np.ndarray:
        """A writable typed view of the ``shape`` tile at byte ``addr`` of ``buf``; AccelError names ``where``."""
        dt = self.config.buffer_dtype(buf)
        nbytes = int(shape[0]) * int(shape[1]) * dt.itemsize
        size = self.bytes[buf].size
        if addr < 0 or addr % dt.itemsize:
            raise AccelError(f"{where}: address {addr:#x} in {buf} SRAM is not a multiple of {dt.itemsize} ({dt})")
        if addr + nbytes > size:
            raise AccelError(
                f"{where}: reads/writes {buf}[{addr:#x}:{addr + nbytes:#x}] ({shape[0]}x{shape[1]} {dt}) "
                f"but the {buf} SRAM has only {size} bytes (0x0..{size - 1:#x}); address {max(addr, size):#x} is outside it"
            )
        return self.bytes[buf][addr: addr + nbytes].view(dt).reshape(shape)


class Accelerator:
    """The simulated accelerator: ``run(program, dram)`` executes a command stream and returns RunStats."""

    def __init__(self, config: AccelConfig) -> None:
        self.config = config
        self.sram = Sram(config)

    def _region(self, cmd: Command, dram: dict, where: str) -> np.ndarray:
        if cmd.tensor not in dram:
            raise AccelError(f"{where}: DRAM has no tensor {cmd.tensor!r} (it has {sorted(dram)})")
        t = dram[cmd.tensor]
        (r0, r1), (c0, c1) = cmd.rows, cmd.cols
        if t.ndim != 2 or not (0 <= r0 < r1 <= t.shape[0] and 0 <= c0 < c1 <= t.shape[1]):
            raise AccelError(
                f"{where}: region {cmd.tensor}[{r0}:{r1}, {c0}:{c1}] is empty or outside the tensor of shape {t.shape}"
            )
        return t[r0:r1, c0:c1]

    def step(self, i: int, cmd: Command, dram: dict, mode: str, stats: RunStats) -> CommandStat:
        """Execute one command; returns its cost."""
        cfg = self.config
        where = f"command {i} ({cmd.asm()})" if hasattr(cmd, "asm") else f"command {i}"
        if isinstance(cmd, DmaLoad):
            src = self._region(cmd, dram, where)
            want = cfg.buffer_dtype(cmd.buf)
            if src.dtype != want:
                raise AccelError(f"{where}: DRAM tensor {cmd.tensor} is {src.dtype} but the {cmd.buf} SRAM holds {want}")
            if cmd.repeat < 1:
                raise AccelError(f"{where}: repeat must be >= 1")
            dst = self.sram.tile(cmd.buf, cmd.addr, cmd.shape, where)
            dst[...] = np.tile(src, (cmd.repeat, 1))
            nbytes = command_bytes(cmd, cfg)
            stats.dma_bytes_in += nbytes
            return CommandStat(i, cmd.asm(), dma_cycles(nbytes, cfg), nbytes)
        if isinstance(cmd, DmaStore):
            dst = self._region(cmd, dram, where)
            if dst.dtype != cfg.acc_dtype:
                raise AccelError(f"{where}: DRAM tensor {cmd.tensor} is {dst.dtype}; results are {cfg.acc_dtype}")
            src = self.sram.tile("out", cmd.addr, cmd.shape, where)
            dst[...] = np.maximum(src, 0) if cmd.relu else src
            nbytes = command_bytes(cmd, cfg)
            stats.dma_bytes_out += nbytes
            return CommandStat(i, cmd.asm(), dma_cycles(nbytes, cfg), nbytes)
        if isinstance(cmd, MatMul):
            check_tile(cmd.m, cmd.n, cmd.k, cfg, where)
            a = self.sram.tile("in", cmd.a_addr, (cmd.m, cmd.k), where)
            b = self.sram.tile("wt", cmd.b_addr, (cmd.k, cmd.n), where)
            c = self.sram.tile("out", cmd.c_addr, (cmd.m, cmd.n), where)
            run = run_tile(a, b, cfg, mode)
            if cmd.acc:
                c += run.out
            else:
                c[...] = run.out
            if run.trace is not None:
                stats.traces.append(run.trace)
            return CommandStat(i, cmd.asm(), run.cycles, 0, run.macs)
        raise AccelError(f"command {i}: {cmd!r} is not a DmaLoad, MatMul or DmaStore")

    def run(self, program: Program, dram: dict[str, np.ndarray], mode: str = "vector") -> RunStats:
        """Run every command in order against ``dram`` (name -> 2-D array; stores write into it in place)."""
        stats = RunStats(self.config)
        for i, cmd in enumerate(program):
            st = self.step(i, cmd, dram, mode, stats)
            stats.commands.append(st)
            stats.cycles += st.cycles
            if isinstance(cmd, MatMul):
                stats.compute_cycles += st.cycles
                stats.macs += st.macs
            else:
                stats.dma_cycles += st.cycles
        return stats
