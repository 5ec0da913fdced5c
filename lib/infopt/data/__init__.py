"""Small datasets that ship with the installed packages or are generated; nothing is downloaded."""
from .digits import DigitsSplit, evaluate_digits_model, load_digits_split, train_digits_model

__all__ = ["DigitsSplit", "evaluate_digits_model", "load_digits_split", "train_digits_model"]
