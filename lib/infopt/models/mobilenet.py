"""MobileNetV3-small in plain torch (torchvision's layout: inverted residuals, squeeze-excite, hard-swish), seeded.

Its ops beyond ResNet's: depthwise convolutions (group = channels), HardSwish, and the squeeze-excite gate
(global average pool, two 1x1 convs, HardSigmoid, a broadcasting Mul). BatchNorm statistics are calibrated on
seeded random images (see ``resnet.calibrate_batchnorm``).
"""
from __future__ import annotations

# (input channels, kernel, expanded channels, output channels, squeeze-excite, activation, stride)
SMALL_CONFIG = (
    (16, 3, 16, 16, True, "RE", 2), (16, 3, 72, 24, False, "RE", 2), (24, 3, 88, 24, False, "RE", 1),
    (24, 5, 96, 40, True, "HS", 2), (40, 5, 240, 40, True, "HS", 1), (40, 5, 240, 40, True, "HS", 1),
    (40, 5, 120, 48, True, "HS", 1), (48, 5, 144, 48, True, "HS", 1), (48, 5, 288, 96, True, "HS", 2),
    (96, 5, 576, 96, True, "HS", 1), (96, 5, 576, 96, True, "HS", 1),
)


def make_divisible(v: float, divisor: int = 8) -> int:
    """torchvision's channel rounding: to a multiple of ``divisor``, never below 90% of ``v``."""
    new = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * v else new


def mobilenet_v3_small(num_classes: int = 1000, seed: int = 0):
    """MobileNetV3-small (torchvision layout, width 1.0) with seeded random weights, in eval mode; input (N,3,H,W)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    from .resnet import calibrate_batchnorm

    def conv_bn_act(cin: int, cout: int, k: int, stride: int = 1, groups: int = 1, act: str | None = "RE"):
        layers = [nn.Conv2d(cin, cout, k, stride, (k - 1) // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
        if act:
            layers.append(nn.Hardswish() if act == "HS" else nn.ReLU())
        return nn.Sequential(*layers)

    class SqueezeExcitation(nn.Module):
        def __init__(self, channels: int) -> None:
            super().__init__()
            squeeze = make_divisible(channels // 4, 8)
            self.fc1 = nn.Conv2d(channels, squeeze, 1)
            self.fc2 = nn.Conv2d(squeeze, channels, 1)

        def forward(self, x):
            s = F.adaptive_avg_pool2d(x, 1)
            return x * F.hardsigmoid(self.fc2(F.relu(self.fc1(s))))

    class InvertedResidual(nn.Module):
        def __init__(self, cin, k, exp, cout, se, act, stride) -> None:
            super().__init__()
            self.use_res = stride == 1 and cin == cout
            layers = [] if exp == cin else [conv_bn_act(cin, exp, 1, act=act)]
            layers.append(conv_bn_act(exp, exp, k, stride, groups=exp, act=act))
            if se:
                layers.append(SqueezeExcitation(exp))
            layers.append(conv_bn_act(exp, cout, 1, act=None))
            self.block = nn.Sequential(*layers)

        def forward(self, x):
            y = self.block(x)
            return x + y if self.use_res else y

    class MobileNetV3(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            layers = [conv_bn_act(3, 16, 3, 2, act="HS")]
            layers += [InvertedResidual(*cfg) for cfg in SMALL_CONFIG]
            layers.append(conv_bn_act(96, 576, 1, act="HS"))
            self.features = nn.Sequential(*layers)
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.classifier = nn.Sequential(nn.Linear(576, 1024), nn.Hardswish(), nn.Dropout(0.2),
                                            nn.Linear(1024, num_classes))

        def forward(self, x):
            return self.classifier(torch.flatten(self.avgpool(self.features(x)), 1))

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = MobileNetV3()
        for m in model.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.uniform_(m.weight, 0.5, 1.5)
                nn.init.normal_(m.bias, 0.0, 0.1)
        calibrate_batchnorm(model, torch.randn(2, 3, 64, 64))
    return model.eval()
