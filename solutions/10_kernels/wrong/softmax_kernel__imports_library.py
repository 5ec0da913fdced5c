"""Imports the library's kernel instead of writing it."""
from infopt.kernels.softmax import softmax_kernel  # noqa: F401
