"""Small models for scikit-learn's 8x8 digits (10 classes): an MLP and a CNN."""
from __future__ import annotations


def digits_mlp(hidden: int = 64, seed: int = 0):
    """MLP 64 -> hidden -> hidden -> 10 with ReLU; input (N, 64) or (N, 1, 8, 8) (flattened first)."""
    import torch
    import torch.nn as nn

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return nn.Sequential(
            nn.Flatten(1), nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
            nn.Linear(hidden, 10),
        ).eval()


def digits_cnn(channels: int = 16, seed: int = 0):
    """CNN: two conv3x3+BN+ReLU, max-pool, two linear layers; input (N, 1, 8, 8), output (N, 10) logits."""
    import torch
    import torch.nn as nn

    c = channels
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return nn.Sequential(
            nn.Conv2d(1, c, 3, padding=1), nn.BatchNorm2d(c), nn.ReLU(),
            nn.Conv2d(c, 2 * c, 3, padding=1), nn.BatchNorm2d(2 * c), nn.ReLU(),
            nn.MaxPool2d(2), nn.Flatten(1), nn.Linear(2 * c * 16, 64), nn.ReLU(), nn.Linear(64, 10),
        ).eval()
