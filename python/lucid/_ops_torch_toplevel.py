"""torch.* names that are nn.functional ops which torch also exports at its top level: the same
function objects (bilinear, conv3d, pixel_shuffle, rrelu, ...), and the dropout family in torch's
top-level form `(input, p, train)` with in-place variants (which return the input object itself,
as torch's do). Defined once in nn.functional; this
module only exposes them under torch's top-level names."""
from lucid.nn import functional as F

__all__ = ["bilinear", "channel_shuffle", "conv3d", "conv_tbc", "conv_transpose3d", "max_pool3d",
           "max_pool1d_with_indices", "pixel_shuffle", "pixel_unshuffle", "rrelu", "rrelu_", "dropout_",
           "alpha_dropout_", "feature_dropout", "feature_dropout_", "feature_alpha_dropout",
           "feature_alpha_dropout_"]

bilinear, channel_shuffle, conv_tbc = F.bilinear, F.channel_shuffle, F.conv_tbc
conv3d, conv_transpose3d, max_pool3d = F.conv3d, F.conv_transpose3d, F.max_pool3d
pixel_shuffle, pixel_unshuffle, rrelu, rrelu_ = F.pixel_shuffle, F.pixel_unshuffle, F.rrelu, F.rrelu_
max_pool1d_with_indices = F.max_pool1d_with_indices


def dropout_(input, p, train):
    F.dropout(input, p, train, inplace=True)
    return input


def alpha_dropout_(input, p, train):
    F.alpha_dropout(input, p, train, inplace=True)
    return input


def feature_dropout(input, p, train):
    """Zeroes whole channels (dim 1 of (N, C, *)), as torch.feature_dropout / F.dropout2d."""
    return F.dropout2d(input, p, train)


def feature_dropout_(input, p, train):
    F.dropout2d(input, p, train, inplace=True)
    return input


def feature_alpha_dropout(input, p, train):
    return F.feature_alpha_dropout(input, p, train)


def feature_alpha_dropout_(input, p, train):
    F.feature_alpha_dropout(input, p, train, inplace=True)
    return input
