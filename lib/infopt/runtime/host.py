"""The machine a benchmark ran on, named so that figures shipped from one host can be told from another's."""
from __future__ import annotations

import os
import platform
from pathlib import Path


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else what `platform` knows, e.g. 'Intel(R) Xeon(R) ...'."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and ":" in line:
                return " ".join(line.split(":", 1)[1].split())
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_summary(threads: str = "one thread per path") -> str:
    """'<cpu model>, <n> cores, <threads>': the `machine` field of a benchmark's JSON."""
    return f"{cpu_model()}, {os.cpu_count()} cores, {threads}"
