"""Recurrent sequence classifiers in plain torch: token ids -> Embedding -> GRU or LSTM -> Linear, seeded.

The exporters write ``nn.GRU`` / ``nn.LSTM`` as ONNX GRU / LSTM nodes (one per layer and direction group), with
torch's gate order rearranged to ONNX's; the embedding is a Gather on int64 token ids.
"""
from __future__ import annotations


def sequence_classifier(cell: str = "gru", vocab: int = 100, embed: int = 16, hidden: int = 32, layers: int = 2,
                        bidirectional: bool = False, num_classes: int = 5, seed: int = 0):
    """Embedding(vocab, embed) -> ``cell`` (``"gru"`` or ``"lstm"``; batch first) -> Linear on the last step's
    features; input int64 token ids (N, T), output logits (N, num_classes). Seeded, in eval mode."""
    import torch
    import torch.nn as nn

    rnns = {"gru": nn.GRU, "lstm": nn.LSTM}
    if cell not in rnns:
        raise ValueError(f"cell must be one of {sorted(rnns)}, got {cell!r}")

    class SequenceClassifier(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(vocab, embed)
            self.rnn = rnns[cell](embed, hidden, num_layers=layers, batch_first=True, bidirectional=bidirectional)
            self.head = nn.Linear(hidden * (2 if bidirectional else 1), num_classes)

        def forward(self, tokens):
            out, _ = self.rnn(self.embed(tokens))
            return self.head(out[:, -1])

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return SequenceClassifier().eval()
