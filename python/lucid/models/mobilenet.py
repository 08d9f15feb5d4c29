"""MobileNet-v2 (Sandler et al., 2018) with torchvision's module tree, so its state_dict keys are
torchvision's (features.0.0.weight, features.1.conv.0.1.running_mean, classifier.1.weight, ...)
and a torchvision checkpoint saved as safetensors loads as it is.

Inverted residual blocks: a 1x1 expansion (skipped when the expand ratio is 1), a 3x3 depthwise
conv, a 1x1 linear projection, a residual add when the stride is 1 and the widths match; ReLU6.
`width_mult` scales the channels, rounded to multiples of 8 as torchvision's _make_divisible.
Initialisation as torchvision's: Kaiming-normal fan_out convs, BatchNorm 1/0, classifier N(0, 0.01).
"""
import lucid.nn as nn

from lucid.models._layers import conv_norm_act, make_divisible
from lucid.models._registry import register_model

# (expand ratio t, output channels c, repeats n, first stride s), torchvision's table
SETTINGS = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2], [6, 320, 1, 1]]


class InvertedResidual(nn.Module):
    def __init__(self, inp, oup, stride, expand_ratio):
        super().__init__()
        hidden = int(round(inp * expand_ratio))
        self.use_res_connect = stride == 1 and inp == oup
        layers = [conv_norm_act(inp, hidden, kernel_size=1)] if expand_ratio != 1 else []
        layers += [conv_norm_act(hidden, hidden, stride=stride, groups=hidden),
                   nn.Conv2d(hidden, oup, 1, 1, 0, bias=False), nn.BatchNorm2d(oup)]
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.use_res_connect else self.conv(x)


class MobileNetV2(nn.Module):
    def __init__(self, num_classes=1000, width_mult=1.0, dropout=0.2):
        super().__init__()
        if not width_mult > 0:
            raise ValueError(f"MobileNetV2: argument 'width_mult' must be positive, got {width_mult!r}")
        cin = make_divisible(32 * width_mult)
        self.last_channel = make_divisible(1280 * max(1.0, width_mult))
        features = [conv_norm_act(3, cin, stride=2)]
        for t, c, n, s in SETTINGS:
            cout = make_divisible(c * width_mult)
            for i in range(n):
                features.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
                cin = cout
        features.append(conv_norm_act(cin, self.last_channel, kernel_size=1))
        self.features = nn.Sequential(*features)
        self.classifier = nn.Sequential(nn.Dropout(p=dropout), nn.Linear(self.last_channel, num_classes))
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, 0, 0.01)
                nn.init.zeros_(m.bias)

    def forward(self, x):
        x = nn.functional.adaptive_avg_pool2d(self.features(x), (1, 1))
        return self.classifier(x.flatten(1))


@register_model
def mobilenet_v2(**cfg):
    """MobileNet-v2 (torchvision's mobilenet_v2)."""
    return MobileNetV2(**cfg)
