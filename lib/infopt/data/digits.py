"""scikit-learn's bundled 8x8 digits (1,797 images, no download), split and normalized, and a tiny trainer."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class DigitsSplit:
    """Train/test arrays: images float32 (N, 1, 8, 8) normalized with the train mean/std, labels int64 (N,)."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    mean: float
    std: float

    def __iter__(self):  # allows ``x_train, y_train, x_test, y_test = load_digits_split()``
        return iter((self.x_train, self.y_train, self.x_test, self.y_test))


def load_digits_split(seed: int = 0, test_fraction: float = 0.25) -> DigitsSplit:
    """The digits dataset as a seeded, stratified train/test split, images shaped (N,1,8,8) float32."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split

    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be in (0, 1), got {test_fraction}")
    d = load_digits()
    x = d.images.astype(np.float32)[:, None, :, :]
    y = d.target.astype(np.int64)
    x_tr, x_te, y_tr, y_te = train_test_split(x, y, test_size=test_fraction, random_state=seed, stratify=y)
    mean, std = float(x_tr.mean()), float(x_tr.std())
    norm = lambda a: ((a - mean) / std).astype(np.float32)  # noqa: E731
    return DigitsSplit(norm(x_tr), y_tr, norm(x_te), y_te, mean, std)


def train_digits_model(
    model: Any,
    data: DigitsSplit | None = None,
    epochs: int = 15,
    lr: float = 3e-3,
    batch_size: int = 64,
    seed: int = 0,
) -> float:
    """Train ``model`` (torch, maps (N,1,8,8) to 10 logits) with Adam in place; returns test accuracy in [0, 1]."""
    import torch

    if epochs < 1 or batch_size < 1:
        raise ValueError(f"epochs and batch_size must be >= 1, got {epochs}, {batch_size}")
    data = data if data is not None else load_digits_split(seed)
    x, y = torch.from_numpy(data.x_train), torch.from_numpy(data.y_train)
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    loss_fn = torch.nn.CrossEntropyLoss()
    model.train()
    for _ in range(epochs):
        perm = torch.randperm(len(x), generator=gen)
        for i in range(0, len(x), batch_size):
            idx = perm[i : i + batch_size]
            opt.zero_grad()
            loss_fn(model(x[idx]), y[idx]).backward()
            opt.step()
    return evaluate_digits_model(model, data)


def evaluate_digits_model(model: Any, data: DigitsSplit) -> float:
    """Test accuracy of a torch model on the split (puts the model in eval mode)."""
    import torch

    model.eval()
    with torch.no_grad():
        pred = model(torch.from_numpy(data.x_test)).argmax(1).numpy()
    return float((pred == data.y_test).mean())
