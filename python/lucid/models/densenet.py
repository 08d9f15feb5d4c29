"""DenseNet-121 (Huang et al., 2017) with torchvision's module tree, so its state_dict keys are
torchvision's current ones (features.conv0.weight, features.denseblock1.denselayer1.norm1.weight,
features.transition1.conv.weight, features.norm5.running_var, classifier.weight, ...).

Dense blocks: each layer sees the concatenation of the block's input and every earlier layer's
output (BN, ReLU, 1x1 conv to bn_size * growth_rate, BN, ReLU, 3x3 conv to growth_rate, optional
dropout); transitions halve the width and the resolution. `growth_rate`, `block_config` and
`num_init_features` give the reduced-width twins. Initialisation as torchvision's.
"""
from collections import OrderedDict

import lucid
import lucid.nn as nn
import lucid.nn.functional as F

from lucid.models._registry import register_model


class DenseLayer(nn.Module):
    def __init__(self, num_input_features, growth_rate, bn_size, drop_rate):
        super().__init__()
        self.norm1 = nn.BatchNorm2d(num_input_features)
        self.relu1 = nn.ReLU(inplace=True)
        self.conv1 = nn.Conv2d(num_input_features, bn_size * growth_rate, 1, bias=False)
        self.norm2 = nn.BatchNorm2d(bn_size * growth_rate)
        self.relu2 = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(bn_size * growth_rate, growth_rate, 3, padding=1, bias=False)
        self.drop_rate = float(drop_rate)

    def forward(self, features):
        x = lucid.cat(features, 1)
        out = self.conv2(self.relu2(self.norm2(self.conv1(self.relu1(self.norm1(x))))))
        return F.dropout(out, p=self.drop_rate, training=self.training) if self.drop_rate > 0 else out


class DenseBlock(nn.ModuleDict):
    def __init__(self, num_layers, num_input_features, bn_size, growth_rate, drop_rate):
        super().__init__()
        for i in range(num_layers):
            self.add_module(f"denselayer{i + 1}",
                            DenseLayer(num_input_features + i * growth_rate, growth_rate, bn_size, drop_rate))

    def forward(self, x):
        features = [x]
        for layer in self.values():
            features.append(layer(features))
        return lucid.cat(features, 1)


class Transition(nn.Sequential):
    def __init__(self, num_input_features, num_output_features):
        super().__init__()
        self.norm = nn.BatchNorm2d(num_input_features)
        self.relu = nn.ReLU(inplace=True)
        self.conv = nn.Conv2d(num_input_features, num_output_features, 1, bias=False)
        self.pool = nn.AvgPool2d(2, stride=2)


class DenseNet(nn.Module):
    def __init__(self, growth_rate=32, block_config=(6, 12, 24, 16), num_init_features=64, bn_size=4, drop_rate=0.0,
                 num_classes=1000):
        super().__init__()
        if growth_rate < 1 or num_init_features < 1 or not block_config:
            raise ValueError(f"DenseNet: growth_rate and num_init_features must be positive and block_config "
                             f"non-empty, got {growth_rate}, {num_init_features}, {block_config}")
        self.features = nn.Sequential(OrderedDict([
            ("conv0", nn.Conv2d(3, num_init_features, 7, stride=2, padding=3, bias=False)),
            ("norm0", nn.BatchNorm2d(num_init_features)),
            ("relu0", nn.ReLU(inplace=True)),
            ("pool0", nn.MaxPool2d(3, stride=2, padding=1))]))
        n = num_init_features
        for i, layers in enumerate(block_config):
            self.features.add_module(f"denseblock{i + 1}", DenseBlock(layers, n, bn_size, growth_rate, drop_rate))
            n += layers * growth_rate
            if i != len(block_config) - 1:
                self.features.add_module(f"transition{i + 1}", Transition(n, n // 2))
                n //= 2
        self.features.add_module("norm5", nn.BatchNorm2d(n))
        self.classifier = nn.Linear(n, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight)
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
            elif isinstance(m, nn.Linear):
                nn.init.constant_(m.bias, 0)

    def forward(self, x):
        out = F.adaptive_avg_pool2d(F.relu(self.features(x)), (1, 1))
        return self.classifier(out.flatten(1))


@register_model
def densenet121(**cfg):
    """DenseNet-121: growth 32, blocks (6, 12, 24, 16), 64 initial features (torchvision's densenet121)."""
    return DenseNet(**cfg)
