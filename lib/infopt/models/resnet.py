"""ResNet-18 and ResNet-50 in plain torch (the torchvision layout), with seeded random weights.

Nothing is downloaded: weights are drawn from a seeded generator and the BatchNorm running statistics
are calibrated on one batch of seeded random images, so activations keep a realistic scale and
BatchNorm is not the identity (folding it away is then a visible, checkable rewrite).
"""
from __future__ import annotations

from typing import Any


def _nn():
    import torch.nn as nn

    return nn


def _conv_bn(cin: int, cout: int, k: int, stride: int = 1) -> list[Any]:
    nn = _nn()
    return [nn.Conv2d(cin, cout, k, stride, padding=k // 2, bias=False), nn.BatchNorm2d(cout)]


def _basic_block(cin: int, cout: int, stride: int):
    """The two-conv residual block of ResNet-18/34."""
    nn = _nn()

    class BasicBlock(nn.Module):
        expansion = 1

        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.bn1 = _conv_bn(cin, cout, 3, stride)
            self.conv2, self.bn2 = _conv_bn(cout, cout, 3)
            self.relu = nn.ReLU()
            self.downsample = (
                nn.Sequential(*_conv_bn(cin, cout, 1, stride)) if stride != 1 or cin != cout else None
            )

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + identity)

    return BasicBlock()


def _bottleneck(cin: int, width: int, stride: int):
    """The 1x1-3x3-1x1 bottleneck block of ResNet-50 (output channels = 4 * width)."""
    nn = _nn()
    cout = 4 * width

    class Bottleneck(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.bn1 = _conv_bn(cin, width, 1)
            self.conv2, self.bn2 = _conv_bn(width, width, 3, stride)
            self.conv3, self.bn3 = _conv_bn(width, cout, 1)
            self.relu = nn.ReLU()
            self.downsample = (
                nn.Sequential(*_conv_bn(cin, cout, 1, stride)) if stride != 1 or cin != cout else None
            )

        def forward(self, x):
            identity = x if self.downsample is None else self.downsample(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            return self.relu(out + identity)

    return Bottleneck()


def _ResNet(block: str, layers: tuple[int, ...], num_classes: int, width: int):
    """The torchvision module layout (conv1, bn1, relu, maxpool, layer1..4, avgpool, fc), so ONNX names read well."""
    import torch

    nn = _nn()

    class ResNet(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1, self.bn1 = _conv_bn(3, width, 7, 2)
            self.relu = nn.ReLU()
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            cin = width
            for i, n in enumerate(layers):
                w, blocks = width * 2**i, []
                for j in range(n):
                    stride = 2 if (i > 0 and j == 0) else 1
                    blocks.append(_basic_block(cin, w, stride) if block == "basic" else _bottleneck(cin, w, stride))
                    cin = w if block == "basic" else 4 * w
                setattr(self, f"layer{i + 1}", nn.Sequential(*blocks))
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(cin, num_classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            for i in range(len(layers)):
                x = getattr(self, f"layer{i + 1}")(x)
            return self.fc(torch.flatten(self.avgpool(x), 1))

    return ResNet()


def _build(block: str, layers: tuple[int, ...], num_classes: int, seed: int, width: int = 64):
    import torch

    nn = _nn()
    if num_classes < 1:
        raise ValueError(f"num_classes must be >= 1, got {num_classes}")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = _ResNet(block, layers, num_classes, width)
        for m in model.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.uniform_(m.weight, 0.5, 1.5)
                nn.init.normal_(m.bias, 0.0, 0.1)
        calibrate_batchnorm(model, torch.randn(2, 3, 112, 112))
    return model.eval()


def calibrate_batchnorm(model, images) -> None:
    """Set every BatchNorm's running mean/var to the statistics of one forward pass over ``images``."""
    import torch

    nn = _nn()
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # cumulative average: one batch sets the statistics exactly
    model.train()
    with torch.no_grad():
        model(images)
    for m in bns:
        m.momentum = 0.1
    model.eval()


def resnet18(num_classes: int = 1000, seed: int = 0):
    """ResNet-18 (BasicBlock x [2,2,2,2]) with seeded random weights, in eval mode; input (N,3,H,W)."""
    return _build("basic", (2, 2, 2, 2), num_classes, seed)


def resnet50(num_classes: int = 1000, seed: int = 0):
    """ResNet-50 (Bottleneck x [3,4,6,3]) with seeded random weights, in eval mode; input (N,3,H,W)."""
    return _build("bottleneck", (3, 4, 6, 3), num_classes, seed)
