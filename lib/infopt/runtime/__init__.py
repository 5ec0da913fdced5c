"""Runtime measurement: interleaved timing with medians, and the roofline of this machine."""
from .timing import interleaved, median_ratio, paired_ratio

__all__ = ["interleaved", "median_ratio", "paired_ratio"]
