"""All nn modules, gathered for lucid.nn."""
from lucid.nn.modules.module import Module
from lucid.nn.modules.container import Container, Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict
from lucid.nn.modules.linear import Identity, Linear, Bilinear, Flatten, Unflatten
from lucid.nn.modules.conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d, ConvTranspose3d
from lucid.nn.modules.pooling import (MaxPool1d, MaxPool2d, MaxPool3d, AvgPool1d, AvgPool2d, AvgPool3d,
                                      AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveAvgPool3d, AdaptiveMaxPool1d,
                                      AdaptiveMaxPool2d, AdaptiveMaxPool3d, LPPool1d, LPPool2d, LPPool3d,
                                      MaxUnpool1d, MaxUnpool2d, MaxUnpool3d, FractionalMaxPool2d, FractionalMaxPool3d)
from lucid.nn.modules.normalization import (BatchNorm1d, BatchNorm2d, BatchNorm3d, SyncBatchNorm, LayerNorm,
                                            GroupNorm, RMSNorm, LocalResponseNorm, CrossMapLRN2d)
from lucid.nn.modules.instancenorm import InstanceNorm1d, InstanceNorm2d, InstanceNorm3d
from lucid.nn.modules.sparse import Embedding, EmbeddingBag
from lucid.nn.modules.dropout import Dropout, Dropout1d, Dropout2d, Dropout3d, AlphaDropout, FeatureAlphaDropout
from lucid.nn.modules.activation import (ReLU, ReLU6, LeakyReLU, ELU, SELU, CELU, GELU, SiLU, Mish, Hardswish,
                                         Hardsigmoid, Hardtanh, Softplus, Softsign, Sigmoid, Tanh, LogSigmoid,
                                         Softmax, LogSoftmax, Softmin, GLU, PReLU, Threshold, RReLU, Hardshrink,
                                         Softshrink, Tanhshrink, Softmax2d, MultiheadAttention)
from lucid.nn.modules.transformer import (TransformerEncoderLayer, TransformerEncoder, TransformerDecoderLayer,
                                          TransformerDecoder, Transformer)
from lucid.nn.modules.rnn import RNNBase, RNN, LSTM, GRU, RNNCellBase, RNNCell, LSTMCell, GRUCell
from lucid.nn.modules.loss import (MSELoss, L1Loss, SmoothL1Loss, HuberLoss, CrossEntropyLoss, NLLLoss, NLLLoss2d,
                                   BCELoss, BCEWithLogitsLoss, KLDivLoss, PoissonNLLLoss, GaussianNLLLoss,
                                   HingeEmbeddingLoss, MultiLabelMarginLoss, SoftMarginLoss,
                                   MultiLabelSoftMarginLoss, CosineEmbeddingLoss, MarginRankingLoss, MultiMarginLoss,
                                   TripletMarginLoss, TripletMarginWithDistanceLoss, CTCLoss)
from lucid.nn.modules.padding import (ConstantPad1d, ConstantPad2d, ConstantPad3d, ZeroPad1d, ZeroPad2d, ZeroPad3d,
                                      ReflectionPad1d, ReflectionPad2d, ReflectionPad3d, ReplicationPad1d,
                                      ReplicationPad2d, ReplicationPad3d, CircularPad1d, CircularPad2d,
                                      CircularPad3d)
from lucid.nn.modules.distance import PairwiseDistance, CosineSimilarity
from lucid.nn.modules.pixelshuffle import PixelShuffle, PixelUnshuffle, ChannelShuffle
from lucid.nn.modules.upsampling import Upsample, UpsamplingNearest2d, UpsamplingBilinear2d
from lucid.nn.modules.fold import Fold, Unfold
from lucid.nn.modules.data_parallel import DataParallel
from lucid.nn.modules.lazy import (UninitializedParameter, UninitializedBuffer, LazyLinear, LazyConv1d, LazyConv2d,
                                   LazyConv3d, LazyConvTranspose1d,
                                   LazyConvTranspose2d, LazyConvTranspose3d, LazyBatchNorm1d, LazyBatchNorm2d,
                                   LazyBatchNorm3d, LazyInstanceNorm1d, LazyInstanceNorm2d, LazyInstanceNorm3d)
from lucid.nn.modules.adaptive import AdaptiveLogSoftmaxWithLoss
