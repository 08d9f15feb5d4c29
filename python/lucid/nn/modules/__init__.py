"""All nn modules, gathered for lucid.nn."""
from lucid.nn.modules.module import Module
from lucid.nn.modules.container import Sequential, ModuleList, ModuleDict, ParameterList, ParameterDict
from lucid.nn.modules.linear import Identity, Linear, Bilinear, Flatten, Unflatten
from lucid.nn.modules.conv import Conv1d, Conv2d, ConvTranspose1d, ConvTranspose2d
from lucid.nn.modules.pooling import (MaxPool1d, MaxPool2d, AvgPool1d, AvgPool2d, AdaptiveAvgPool1d,
                                      AdaptiveAvgPool2d)
from lucid.nn.modules.normalization import BatchNorm1d, BatchNorm2d, BatchNorm3d, LayerNorm, GroupNorm, RMSNorm
from lucid.nn.modules.sparse import Embedding
from lucid.nn.modules.dropout import Dropout, Dropout1d, Dropout2d, Dropout3d, AlphaDropout
from lucid.nn.modules.activation import (ReLU, ReLU6, LeakyReLU, ELU, SELU, CELU, GELU, SiLU, Mish, Hardswish,
                                         Hardsigmoid, Hardtanh, Softplus, Softsign, Sigmoid, Tanh, LogSigmoid,
                                         Softmax, LogSoftmax, Softmin, GLU, PReLU, MultiheadAttention)
from lucid.nn.modules.transformer import (TransformerEncoderLayer, TransformerEncoder, TransformerDecoderLayer,
                                          TransformerDecoder, Transformer)
from lucid.nn.modules.rnn import RNNBase, RNN, LSTM, GRU, RNNCell, LSTMCell, GRUCell
from lucid.nn.modules.loss import (MSELoss, L1Loss, SmoothL1Loss, HuberLoss, CrossEntropyLoss, NLLLoss, BCELoss,
                                   BCEWithLogitsLoss, KLDivLoss)
