"""The accelerator's instruction set: a command stream of DMA loads, tile matmuls and DMA stores.

Three commands (``DmaLoad``, ``MatMul``, ``DmaStore``), each printed as one line of assembly (``Program.asm()``)
and parsed back (``parse_asm``):

    LOAD    in[0x0000] <- A[0:16, 0:4]            DRAM region -> SRAM buffer at a byte address (DMA)
    LOAD    out[0x0000] <- bias[0:1, 0:4] x16     ... with the region's rows repeated 16 times (broadcast)
    MATMUL  out[0x0000] <- in[0x0000] * wt[0x0000] m=16 n=4 k=4 acc=0
                                                  one m x n x k tile on the array; acc=1 adds to what out holds
    STORE   out[0x0000] -> C[0:16, 0:4] relu      SRAM -> DRAM region, through the output path (ReLU optional)

Tiles sit row-major and contiguous in SRAM. DRAM holds named 2-D tensors. (The DMA commands are what unit 04's
``npu.dma_load`` / ``npu.dma_store`` ops lower to; the kernel IR's ``Load``/``Store`` are element accesses.)
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Iterator, Union

from .config import AccelError, check_buffer


def _region(tensor: str, rows: tuple[int, int], cols: tuple[int, int]) -> str:
    return f"{tensor}[{rows[0]}:{rows[1]}, {cols[0]}:{cols[1]}]"


@dataclass(frozen=True)
class DmaLoad:
    """DMA ``tensor[rows, cols]`` from DRAM into SRAM buffer ``buf`` at byte ``addr`` (rows repeated ``repeat`` times)."""

    buf: str
    addr: int
    tensor: str
    rows: tuple[int, int]
    cols: tuple[int, int]
    repeat: int = 1

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, cols) of the tile written into SRAM."""
        return ((self.rows[1] - self.rows[0]) * self.repeat, self.cols[1] - self.cols[0])

    def asm(self) -> str:
        """This command as one line of assembly."""
        rep = f" x{self.repeat}" if self.repeat != 1 else ""
        return f"LOAD    {self.buf}[{self.addr:#06x}] <- {_region(self.tensor, self.rows, self.cols)}{rep}"


@dataclass(frozen=True)
class MatMul:
    """Multiply the m x k tile at ``in[a_addr]`` by the k x n tile at ``wt[b_addr]`` into ``out[c_addr]`` (+= if acc)."""

    a_addr: int
    b_addr: int
    c_addr: int
    m: int
    n: int
    k: int
    acc: bool = False

    def asm(self) -> str:
        """This command as one line of assembly."""
        return (
            f"MATMUL  out[{self.c_addr:#06x}] <- in[{self.a_addr:#06x}] * wt[{self.b_addr:#06x}] "
            f"m={self.m} n={self.n} k={self.k} acc={int(self.acc)}"
        )


@dataclass(frozen=True)
class DmaStore:
    """DMA the tile at ``out[addr]`` to DRAM ``tensor[rows, cols]``, applying ReLU on the way if ``relu``."""

    addr: int
    tensor: str
    rows: tuple[int, int]
    cols: tuple[int, int]
    relu: bool = False

    @property
    def shape(self) -> tuple[int, int]:
        """(rows, cols) of the tile read from SRAM."""
        return (self.rows[1] - self.rows[0], self.cols[1] - self.cols[0])

    def asm(self) -> str:
        """This command as one line of assembly."""
        return f"STORE   out[{self.addr:#06x}] -> {_region(self.tensor, self.rows, self.cols)}{' relu' if self.relu else ''}"


Command = Union[DmaLoad, MatMul, DmaStore]


@dataclass
class Program:
    """A command stream and the DRAM tensors it expects: ``tensors[name] = (rows, cols)``."""

    commands: list = field(default_factory=list)
    tensors: dict = field(default_factory=dict)

    def __iter__(self) -> Iterator[Command]:
        return iter(self.commands)

    def __len__(self) -> int:
        return len(self.commands)

    def __getitem__(self, i: int) -> Command:
        return self.commands[i]

    def append(self, cmd: Command) -> None:
        """Add a command at the end of the stream."""
        self.commands.append(cmd)

    def count(self, kind: type) -> int:
        """How many commands of one kind (DmaLoad, MatMul or DmaStore)."""
        return sum(isinstance(c, kind) for c in self.commands)

    def asm(self, limit: int | None = None) -> str:
        """The assembly listing, one numbered command per line (the first ``limit`` lines if given)."""
        lines = [f"{i:4d}: {c.asm()}" for i, c in enumerate(self.commands[:limit])]
        if limit is not None and len(self.commands) > limit:
            lines.append(f"      ... {len(self.commands) - limit} more commands")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.asm()


_NUM = r"(0x[0-9a-fA-F]+|\d+)"
_REG = r"(\w+)\[(\d+):(\d+),\s*(\d+):(\d+)\]"
_LOAD = re.compile(rf"LOAD\s+(\w+)\[{_NUM}\]\s*<-\s*{_REG}(?:\s+x(\d+))?$")
_MATMUL = re.compile(
    rf"MATMUL\s+out\[{_NUM}\]\s*<-\s*in\[{_NUM}\]\s*\*\s*wt\[{_NUM}\]\s+m=(\d+)\s+n=(\d+)\s+k=(\d+)\s+acc=([01])$"
)
_STORE = re.compile(rf"STORE\s+out\[{_NUM}\]\s*->\s*{_REG}(\s+relu)?$")


def parse_asm(text: str) -> Program:
    """Parse an assembly listing (as printed by ``Program.asm``; line numbers and ``;`` comments optional)."""
    prog = Program()
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r"^\s*\d+:\s*", "", raw.split(";")[0]).strip()
        if not line or line.startswith("..."):
            continue
        if m := _LOAD.match(line):
            buf, addr, t, r0, r1, c0, c1, rep = m.groups()
            prog.append(DmaLoad(check_buffer(buf), int(addr, 0), t, (int(r0), int(r1)), (int(c0), int(c1)), int(rep or 1)))
        elif m := _MATMUL.match(line):
            c, a, b, mm, n, k, acc = m.groups()
            prog.append(MatMul(int(a, 0), int(b, 0), int(c, 0), int(mm), int(n), int(k), acc == "1"))
        elif m := _STORE.match(line):
            addr, t, r0, r1, c0, c1, relu = m.groups()
            prog.append(DmaStore(int(addr, 0), t, (int(r0), int(r1)), (int(c0), int(c1)), bool(relu)))
        else:
            raise AccelError(
                f"line {lineno}: cannot parse {raw.strip()!r}; expected LOAD, MATMUL or STORE as printed by Program.asm()"
            )
    return prog
