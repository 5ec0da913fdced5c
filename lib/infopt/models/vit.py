"""A ViT block in plain torch (torchvision's ViT layout, one encoder layer), seeded.

Patch embedding (a strided Conv), a class token concatenated in front (Expand + Concat), learned position
embeddings, one pre-LN encoder block (nn.MultiheadAttention, residual, LayerNorm, MLP with GELU, residual), a
final LayerNorm and a linear head on the class token.
"""
from __future__ import annotations


def vit_block(image: int = 32, patch: int = 8, dim: int = 64, heads: int = 4, mlp: int = 128, num_classes: int = 10,
              seed: int = 0):
    """The ViT block with seeded random weights, in eval mode; input (N, 3, image, image), output (N, num_classes)."""
    import torch
    import torch.nn as nn

    if image % patch:
        raise ValueError(f"image ({image}) must be a multiple of patch ({patch})")
    tokens = (image // patch) ** 2 + 1

    class EncoderBlock(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.ln_1 = nn.LayerNorm(dim, eps=1e-6)
            self.self_attention = nn.MultiheadAttention(dim, heads, batch_first=True)
            self.ln_2 = nn.LayerNorm(dim, eps=1e-6)
            self.mlp = nn.Sequential(nn.Linear(dim, mlp), nn.GELU(), nn.Linear(mlp, dim))

        def forward(self, x):
            h = self.ln_1(x)
            h, _ = self.self_attention(h, h, h, need_weights=False)
            x = x + h
            return x + self.mlp(self.ln_2(x))

    class ViTBlock(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv_proj = nn.Conv2d(3, dim, patch, patch)
            self.class_token = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
            self.pos_embedding = nn.Parameter(torch.randn(1, tokens, dim) * 0.02)
            self.encoder = EncoderBlock()
            self.ln = nn.LayerNorm(dim, eps=1e-6)
            self.head = nn.Linear(dim, num_classes)

        def forward(self, x):
            n = x.shape[0]
            x = self.conv_proj(x).flatten(2).transpose(1, 2)  # (N, patches, dim)
            x = torch.cat([self.class_token.expand(n, -1, -1), x], dim=1) + self.pos_embedding
            x = self.ln(self.encoder(x))
            return self.head(x[:, 0])

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = ViTBlock()
        for ln in (model.encoder.ln_1, model.encoder.ln_2, model.ln):
            nn.init.uniform_(ln.weight, 0.5, 1.5)
            nn.init.normal_(ln.bias, 0.0, 0.1)
    return model.eval()
