"""onnxruntime as a yardstick (runtime work for units 02, 05 and 13): sessions at a chosen optimization level,
and the kernels it really executes."""
from __future__ import annotations

import json
import os
import tempfile
from typing import Any, Mapping

import numpy as np

LEVELS = ("disable_all", "basic", "extended", "all")


def ort_session(model: Any, level: str = "disable_all", threads: int = 1, profile: bool = False,
                optimized_path: str | None = None) -> Any:
    """An onnxruntime CPU InferenceSession for ``model`` (ModelProto, bytes or path) at optimization ``level``."""
    import onnxruntime as ort

    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, got {level!r}")
    so = ort.SessionOptions()
    so.graph_optimization_level = {
        "disable_all": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }[level]
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 3
    if profile:
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(tempfile.mkdtemp(prefix="infopt_ort_"), "profile")
    if optimized_path:
        so.optimized_model_filepath = optimized_path
    data = model.SerializeToString() if hasattr(model, "SerializeToString") else model
    return ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])


def ort_run(model: Any, feeds: Mapping[str, np.ndarray], level: str = "disable_all", threads: int = 1) -> list:
    """Run ``model`` once in onnxruntime at ``level``; returns its outputs."""
    return ort_session(model, level, threads).run(None, dict(feeds))


def ort_kernels(model: Any, feeds: Mapping[str, np.ndarray], level: str = "disable_all") -> dict[str, int]:
    """The kernels onnxruntime executes for one run, from its profiler: op type -> count."""
    sess = ort_session(model, level, profile=True)
    sess.run(None, dict(feeds))
    path = sess.end_profiling()
    with open(path) as f:
        events = json.load(f)
    os.remove(path)
    seen: dict[str, str] = {}
    for e in events:
        if e.get("cat") == "Node" and e.get("name", "").endswith("_kernel_time"):
            seen[e["name"]] = e.get("args", {}).get("op_name", "?")
    counts: dict[str, int] = {}
    for op in seen.values():
        counts[op] = counts.get(op, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def ort_kernel_count(model: Any, feeds: Mapping[str, np.ndarray], level: str = "disable_all") -> int:
    """How many kernels onnxruntime executes for one run of ``model`` at ``level`` (from its profiler)."""
    return sum(ort_kernels(model, feeds, level).values())
