"""EfficientNet-B0 (Tan and Le, 2019) with torchvision's module tree, so its state_dict keys are
torchvision's (features.0.0.weight, features.1.0.block.1.fc1.weight, classifier.1.weight, ...)
and a torchvision checkpoint saved as safetensors loads as it is.

MBConv blocks: a 1x1 expansion (when it changes the width), a depthwise conv, squeeze-excite
(global average pool, 1x1 conv, SiLU, 1x1 conv, sigmoid, scale), a 1x1 linear projection, and a
residual add (through stochastic depth) when the stride is 1 and the widths match; SiLU.
`width_mult`/`depth_mult` scale channels (to multiples of 8, _layers.make_divisible) and
repeats (ceil). Stochastic depth drops whole samples' residual branches in training with the
block's probability (`stochastic_depth_prob` times the block's position over the blocks, as
torchvision's); 0 makes every block deterministic. Initialisation as torchvision's.
"""
import math

import lucid
import lucid.nn as nn

from lucid.models._registry import register_model
from lucid.models._layers import conv_norm_act, make_divisible

# (expand ratio, kernel, stride, input channels, output channels, repeats), torchvision's B0 table
B0 = [[1, 3, 1, 32, 16, 1], [6, 3, 2, 16, 24, 2], [6, 5, 2, 24, 40, 2], [6, 3, 2, 40, 80, 3], [6, 5, 1, 80, 112, 3],
      [6, 5, 2, 112, 192, 4], [6, 3, 1, 192, 320, 1]]


def conv_bn(cin, cout, kernel_size=1, stride=1, groups=1, act=True):
    """Conv2dNormActivation with SiLU (none when act is False), 1x1 by default."""
    return conv_norm_act(cin, cout, kernel_size, stride, groups, nn.SiLU if act else None)


class SqueezeExcitation(nn.Module):
    def __init__(self, channels, squeeze):
        super().__init__()
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc1 = nn.Conv2d(channels, squeeze, 1)
        self.fc2 = nn.Conv2d(squeeze, channels, 1)
        self.activation = nn.SiLU(inplace=True)
        self.scale_activation = nn.Sigmoid()

    def forward(self, x):
        return self.scale_activation(self.fc2(self.activation(self.fc1(self.avgpool(x))))) * x


class StochasticDepth(nn.Module):
    """torchvision.ops.StochasticDepth(p, "row"): in training, each sample's input is zeroed with
    probability p and the others scaled by 1 / (1 - p); identity in eval or when p is 0."""

    def __init__(self, p):
        super().__init__()
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"StochasticDepth: drop probability has to be between 0 and 1, but got {p}")
        self.p = p

    def forward(self, x):
        if not self.training or self.p == 0.0:
            return x
        survival = 1.0 - self.p
        shape = (x.shape[0],) + (1,) * (x.ndim - 1)
        keep = lucid.bernoulli(lucid.full(shape, survival, dtype=x.dtype, device=x.device))
        return x * (keep / survival if survival > 0.0 else keep)

    def extra_repr(self):
        return f"p={self.p}, mode=row"


class MBConv(nn.Module):
    def __init__(self, expand_ratio, kernel, stride, cin, cout, sd_prob):
        super().__init__()
        self.use_res_connect = stride == 1 and cin == cout
        expanded = make_divisible(cin * expand_ratio)
        layers = [conv_bn(cin, expanded)] if expanded != cin else []
        layers += [conv_bn(expanded, expanded, kernel, stride, groups=expanded),
                   SqueezeExcitation(expanded, max(1, cin // 4)), conv_bn(expanded, cout, act=False)]
        self.block = nn.Sequential(*layers)
        self.stochastic_depth = StochasticDepth(sd_prob)

    def forward(self, x):
        out = self.block(x)
        return self.stochastic_depth(out) + x if self.use_res_connect else out


class EfficientNet(nn.Module):
    def __init__(self, table=B0, width_mult=1.0, depth_mult=1.0, num_classes=1000, dropout=0.2,
                 stochastic_depth_prob=0.2):
        super().__init__()
        if not width_mult > 0 or not depth_mult > 0:
            raise ValueError(f"EfficientNet: width_mult and depth_mult must be positive, got {width_mult!r}, "
                             f"{depth_mult!r}")
        rows = [(t, k, s, make_divisible(ci * width_mult), make_divisible(co * width_mult), math.ceil(n * depth_mult))
                for t, k, s, ci, co, n in table]
        layers = [conv_bn(3, rows[0][3], 3, stride=2)]
        total, done = sum(r[5] for r in rows), 0
        for t, k, s, ci, co, n in rows:
            stage = []
            for i in range(n):
                stage.append(MBConv(t, k, s if i == 0 else 1, ci if i == 0 else co, co,
                                    stochastic_depth_prob * done / total))
                done += 1
            layers.append(nn.Sequential(*stage))
        last_in = rows[-1][4]
        layers.append(conv_bn(last_in, 4 * last_in))
        self.features = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout, inplace=True), nn.Linear(4 * last_in, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                r = 1.0 / math.sqrt(m.out_features)
                nn.init.uniform_(m.weight, -r, r)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        return self.classifier(self.avgpool(self.features(x)).flatten(1))


@register_model
def efficientnet_b0(**cfg):
    """EfficientNet-B0 (torchvision's efficientnet_b0)."""
    return EfficientNet(B0, **cfg)
