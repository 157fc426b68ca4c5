"""Layers with torch.nn's names, arguments and parameter names."""
from seqlab.nn import init
from seqlab.nn.activation import GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh
from seqlab.nn.activation_more import (CELU, ELU, GLU, SELU, Hardshrink, Hardsigmoid, Hardswish, Hardtanh, LogSigmoid,
                                       Mish, PReLU, ReLU6, RReLU, Softmax2d, Softmin, Softplus, Softshrink, Softsign,
                                       Tanhshrink, Threshold)
from seqlab.nn.batchnorm import BatchNorm1d, BatchNorm2d
from seqlab.nn.conv import (AdaptiveAvgPool1d, AdaptiveAvgPool2d, AdaptiveMaxPool1d, AvgPool1d, AvgPool2d, Conv1d,
                            Conv2d, ConvTranspose1d, ConvTranspose2d, MaxPool1d, MaxPool2d)
from seqlab.nn.container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from seqlab.nn.dropout import Dropout
from seqlab.nn.linear import Flatten, Identity, LazyLinear, Linear
from seqlab.nn.loss import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss, NLLLoss
from seqlab.nn.loss_more import (BCELoss, CosineEmbeddingLoss, GaussianNLLLoss, HingeEmbeddingLoss, HuberLoss,
                                 KLDivLoss, L1Loss, MarginRankingLoss, MultiLabelSoftMarginLoss, PoissonNLLLoss,
                                 SmoothL1Loss, SoftMarginLoss, TripletMarginLoss)
from seqlab.nn.loss_ctc_margin import (CTCLoss, MultiLabelMarginLoss, MultiMarginLoss,
                                       TripletMarginWithDistanceLoss)
from seqlab.nn.misc_layers import (AlphaDropout, Bilinear, ConstantPad1d, ConstantPad2d, ConstantPad3d,
                                   CosineSimilarity, Dropout1d, Dropout2d, FeatureAlphaDropout, PairwiseDistance,
                                   ReflectionPad1d, ReflectionPad2d, ReplicationPad1d, ReplicationPad2d, Unflatten,
                                   ZeroPad1d, ZeroPad2d, ZeroPad3d)
from seqlab.nn.module import Module, Parameter
from seqlab.nn.vision import (AdaptiveMaxPool2d, ChannelShuffle, CircularPad1d, CircularPad2d, CircularPad3d, Fold,
                              LPPool1d, LPPool2d, MaxUnpool1d, MaxUnpool2d, PixelShuffle, PixelUnshuffle,
                              ReflectionPad3d, ReplicationPad3d, Unfold, Upsample, UpsamplingBilinear2d,
                              UpsamplingNearest2d)
from seqlab.nn.norm import LayerNorm, RMSNorm
from seqlab.nn.norm_more import (BatchNorm3d, GroupNorm, InstanceNorm1d, InstanceNorm2d, InstanceNorm3d,
                                 LocalResponseNorm)
from seqlab.nn.sparse import Embedding, EmbeddingBag
from seqlab.nn.recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from seqlab.nn.recurrent import _CellBase as RNNCellBase, _RNNBase as RNNBase  # torch's bases, for isinstance
from seqlab.nn.additive_attention import AdditiveAttention, LuongAttention
from seqlab.nn.transformer import (ALiBi, LearnedPositionalEmbedding, MultiheadAttention, PositionalEncoding, RotaryEmbedding, SinusoidalPositionalEncoding, Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer, generate_square_subsequent_mask, memory_efficient_attention, positional_encoding, sliding_window_attention)  # noqa: E501
from seqlab.nn.adaptive import AdaptiveLogSoftmaxWithLoss
from seqlab.nn.dropout3d import Dropout3d
from seqlab.nn.lazy import (LazyBatchNorm1d, LazyBatchNorm2d, LazyBatchNorm3d, LazyConv1d, LazyConv2d,
                            LazyConvTranspose1d, LazyConvTranspose2d, LazyInstanceNorm1d, LazyInstanceNorm2d,
                            LazyInstanceNorm3d)

__all__ = [
    "RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell", "AdditiveAttention", "LuongAttention",
    "init", "Module", "Parameter", "Linear", "LazyLinear", "Identity", "Embedding", "EmbeddingBag", "LayerNorm",
    "RMSNorm", "Dropout",
    "BatchNorm1d", "BatchNorm2d",
    "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "ReLU", "GELU", "Tanh",
    "Sigmoid", "SiLU", "Softmax",
    "CrossEntropyLoss", "NLLLoss", "MSELoss", "BCEWithLogitsLoss", "LeakyReLU", "LogSoftmax", "Flatten",
    "ELU", "SELU", "CELU", "Softplus", "Softsign", "Hardtanh", "ReLU6", "Hardsigmoid", "Hardswish", "Mish",
    "LogSigmoid", "Softmin", "GLU", "Tanhshrink", "Softshrink", "Hardshrink", "PReLU", "RReLU",
    "L1Loss", "SmoothL1Loss", "HuberLoss", "BCELoss", "KLDivLoss", "PoissonNLLLoss", "GaussianNLLLoss",
    "MarginRankingLoss", "HingeEmbeddingLoss", "CosineEmbeddingLoss", "TripletMarginLoss", "SoftMarginLoss",
    "MultiLabelSoftMarginLoss",
    "CTCLoss", "MultiMarginLoss", "MultiLabelMarginLoss", "TripletMarginWithDistanceLoss",
    "Unflatten", "Bilinear", "CosineSimilarity", "PairwiseDistance", "ConstantPad1d", "ConstantPad2d",
    "ConstantPad3d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d", "ReflectionPad1d", "ReflectionPad2d",
    "ReplicationPad1d", "ReplicationPad2d", "Dropout1d", "Dropout2d", "AlphaDropout", "FeatureAlphaDropout",
    "Conv1d", "Conv2d", "ConvTranspose1d", "ConvTranspose2d", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d",
    "AdaptiveMaxPool1d",
    "Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d", "PixelShuffle", "PixelUnshuffle", "ChannelShuffle",
    "Fold", "Unfold", "AdaptiveMaxPool2d", "LPPool1d", "LPPool2d", "MaxUnpool1d", "MaxUnpool2d", "ReflectionPad3d",
    "ReplicationPad3d", "CircularPad1d", "CircularPad2d", "CircularPad3d",
    "GroupNorm", "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LocalResponseNorm", "BatchNorm3d",
    "Threshold", "Softmax2d", "RNNBase", "RNNCellBase",
    "AdaptiveLogSoftmaxWithLoss", "Dropout3d", "LazyConv1d", "LazyConv2d", "LazyConvTranspose1d",
    "LazyConvTranspose2d", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d",
    "LazyInstanceNorm2d", "LazyInstanceNorm3d",
    "functional", "utils",
]

from seqlab.nn import functional, utils  # noqa: E402  (nn.functional and nn.utils without importing them)
