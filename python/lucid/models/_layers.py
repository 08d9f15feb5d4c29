"""Building blocks the model families share: torchvision's Conv2dNormActivation and
_make_divisible, written once."""
import lucid.nn as nn


def make_divisible(v, divisor=8):
    """v rounded to the nearest multiple of divisor, at least divisor, never below 90% of v."""
    new_v = max(divisor, int(v + divisor / 2) // divisor * divisor)
    return new_v + divisor if new_v < 0.9 * v else new_v


def conv_norm_act(cin, cout, kernel_size=3, stride=1, groups=1, activation=nn.ReLU6):
    """torchvision's Conv2dNormActivation with BatchNorm: keys .0 (the bias-free conv, "same"
    padding) and .1 (the norm), then the activation (none when activation is None)."""
    layers = [nn.Conv2d(cin, cout, kernel_size, stride, (kernel_size - 1) // 2, groups=groups, bias=False),
              nn.BatchNorm2d(cout)]
    if activation is not None:
        layers.append(activation(inplace=True))
    return nn.Sequential(*layers)
