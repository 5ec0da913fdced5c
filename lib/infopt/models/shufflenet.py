"""ShuffleNetV2 in plain torch (torchvision's layout, x0.5 by default), seeded.

Each unit splits the channels in two (``chunk``), runs one half through a depthwise-separable branch, concatenates
and shuffles the channels (reshape, transpose, reshape, with the sizes read from ``x.size()`` as torchvision
does, so the exported graph computes them with Shape/Gather/Div: static shapes the IR must fold itself).
"""
from __future__ import annotations

WIDTHS = {0.5: (24, 48, 96, 192, 1024), 1.0: (24, 116, 232, 464, 1024)}
REPEATS = (4, 8, 4)


def channel_shuffle(x, groups: int):
    """torchvision's channel shuffle: (N, g*c, H, W) -> (N, c*g, H, W) interleaving the groups."""
    batch, channels, height, width = x.size()
    x = x.view(batch, groups, channels // groups, height, width)
    x = x.transpose(1, 2).contiguous()
    return x.view(batch, channels, height, width)


def shufflenet_v2(width: float = 0.5, num_classes: int = 1000, seed: int = 0):
    """ShuffleNetV2 (x0.5 or x1.0) with seeded random weights, in eval mode; input (N,3,H,W)."""
    import torch
    import torch.nn as nn

    from .resnet import calibrate_batchnorm

    if width not in WIDTHS:
        raise ValueError(f"width must be one of {sorted(WIDTHS)}, got {width}")
    chans = WIDTHS[width]

    def dw(c: int, stride: int):
        return [nn.Conv2d(c, c, 3, stride, 1, groups=c, bias=False), nn.BatchNorm2d(c)]

    def pw(cin: int, cout: int):
        return [nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)]

    class InvertedResidual(nn.Module):
        def __init__(self, cin: int, cout: int, stride: int) -> None:
            super().__init__()
            self.stride = stride
            half = cout // 2
            self.branch1 = nn.Sequential(*dw(cin, stride), *pw(cin, half)) if stride > 1 else nn.Sequential()
            self.branch2 = nn.Sequential(*pw(cin if stride > 1 else half, half), *dw(half, stride), *pw(half, half))

        def forward(self, x):
            if self.stride == 1:
                x1, x2 = x.chunk(2, dim=1)
                out = torch.cat((x1, self.branch2(x2)), dim=1)
            else:
                out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
            return channel_shuffle(out, 2)

    class ShuffleNetV2(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv1 = nn.Sequential(nn.Conv2d(3, chans[0], 3, 2, 1, bias=False), nn.BatchNorm2d(chans[0]),
                                       nn.ReLU(inplace=True))
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            cin = chans[0]
            for i, (n, cout) in enumerate(zip(REPEATS, chans[1:4]), start=2):
                setattr(self, f"stage{i}", nn.Sequential(
                    InvertedResidual(cin, cout, 2), *[InvertedResidual(cout, cout, 1) for _ in range(n - 1)]))
                cin = cout
            self.conv5 = nn.Sequential(*pw(cin, chans[4]))
            self.fc = nn.Linear(chans[4], num_classes)

        def forward(self, x):
            x = self.maxpool(self.conv1(x))
            x = self.conv5(self.stage4(self.stage3(self.stage2(x))))
            return self.fc(x.mean([2, 3]))

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = ShuffleNetV2()
        for m in model.modules():
            if isinstance(m, nn.BatchNorm2d):
                nn.init.uniform_(m.weight, 0.5, 1.5)
                nn.init.normal_(m.bias, 0.0, 0.1)
        calibrate_batchnorm(model, torch.randn(2, 3, 64, 64))
    return model.eval()
