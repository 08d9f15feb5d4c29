"""ResNet (He et al., 2015) with torchvision's module tree, so its state_dict keys are
torchvision's (conv1, bn1, layer1.0.conv1, layer2.0.downsample.0, fc, ...) and a torchvision
checkpoint saved as safetensors loads as it is.

BasicBlock (ResNet-18/34) and Bottleneck (ResNet-50/101/152, the stride on the 3x3 conv as
torchvision's "ResNet v1.5"). `width` scales every stage's channels (64 by default, torchvision's);
a smaller width gives the reduced-width twins the CI parity tests use. Initialisation follows
torchvision's: Kaiming-normal fan_out convs, BatchNorm weight 1 and bias 0; with
zero_init_residual=True the last BatchNorm of each block starts at 0.
"""
import lucid.nn as nn

from lucid.models._registry import register_model


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = nn.Conv2d(inplanes, planes, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.conv3 = nn.Conv2d(planes, planes * self.expansion, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample

    def forward(self, x):
        identity = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + identity)


class ResNet(nn.Module):
    def __init__(self, block, layers, num_classes=1000, width=64, in_channels=3, zero_init_residual=False):
        super().__init__()
        if not isinstance(width, int) or width < 1:
            raise ValueError(f"ResNet: argument 'width' must be a positive int, got {width!r}")
        if len(layers) != 4:
            raise ValueError(f"ResNet: argument 'layers' must give the blocks of 4 stages, got {list(layers)}")
        self.inplanes = width
        self.conv1 = nn.Conv2d(in_channels, width, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, width, layers[0])
        self.layer2 = self._make_layer(block, width * 2, layers[1], stride=2)
        self.layer3 = self._make_layer(block, width * 4, layers[2], stride=2)
        self.layer4 = self._make_layer(block, width * 8, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(width * 8 * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)
        if zero_init_residual:
            for m in self.modules():
                last = getattr(m, "bn3", None) if isinstance(m, Bottleneck) else \
                    getattr(m, "bn2", None) if isinstance(m, BasicBlock) else None
                if last is not None:
                    nn.init.constant_(last.weight, 0)

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(nn.Conv2d(self.inplanes, planes * block.expansion, 1, stride=stride, bias=False),
                                       nn.BatchNorm2d(planes * block.expansion))
        layers = [block(self.inplanes, planes, stride, downsample)]
        self.inplanes = planes * block.expansion
        layers += [block(self.inplanes, planes) for _ in range(1, blocks)]
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.avgpool(x).flatten(1))


@register_model
def resnet18(**cfg):
    """ResNet-18: BasicBlock x [2, 2, 2, 2] (torchvision's resnet18)."""
    return ResNet(BasicBlock, [2, 2, 2, 2], **cfg)


@register_model
def resnet50(**cfg):
    """ResNet-50: Bottleneck x [3, 4, 6, 3] (torchvision's resnet50, v1.5)."""
    return ResNet(Bottleneck, [3, 4, 6, 3], **cfg)
