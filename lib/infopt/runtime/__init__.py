"""Runtime measurement: interleaved timing with medians, the roofline of this machine, and the measured
comparisons behind the unit 06 explorers (``schedule_bench``), one run protocol for every backend (``backends``) and
onnxruntime sessions (``onnxruntime_session``)."""
from .timing import interleaved, median_ratio, paired_ratio

__all__ = ["interleaved", "median_ratio", "paired_ratio"]
