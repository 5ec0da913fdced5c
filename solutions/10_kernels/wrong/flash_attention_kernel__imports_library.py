"""Imports the library's kernel instead of writing it."""
from infopt.kernels.attention import flash_attention_kernel  # noqa: F401
