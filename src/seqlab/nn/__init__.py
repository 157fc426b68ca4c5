"""Layers with torch.nn's names, arguments and parameter names."""
from seqlab.nn import init
from seqlab.nn.activation import GELU, LeakyReLU, LogSoftmax, ReLU, Sigmoid, SiLU, Softmax, Tanh
from seqlab.nn.batchnorm import BatchNorm1d, BatchNorm2d
from seqlab.nn.container import ModuleDict, ModuleList, ParameterDict, ParameterList, Sequential
from seqlab.nn.dropout import Dropout
from seqlab.nn.linear import Flatten, Identity, LazyLinear, Linear
from seqlab.nn.loss import BCEWithLogitsLoss, CrossEntropyLoss, MSELoss, NLLLoss
from seqlab.nn.module import Module, Parameter
from seqlab.nn.norm import LayerNorm, RMSNorm
from seqlab.nn.sparse import Embedding
from seqlab.nn.recurrent import GRU, LSTM, RNN, GRUCell, LSTMCell, RNNCell
from seqlab.nn.additive_attention import AdditiveAttention, LuongAttention
from seqlab.nn.transformer import (ALiBi, LearnedPositionalEmbedding, MultiheadAttention, PositionalEncoding, RotaryEmbedding, SinusoidalPositionalEncoding, Transformer, TransformerDecoder, TransformerDecoderLayer, TransformerEncoder, TransformerEncoderLayer, generate_square_subsequent_mask, memory_efficient_attention, positional_encoding, sliding_window_attention)  # noqa: E501

__all__ = [
    "RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell", "AdditiveAttention", "LuongAttention",
    "init", "Module", "Parameter", "Linear", "LazyLinear", "Identity", "Embedding", "LayerNorm", "RMSNorm", "Dropout",
    "BatchNorm1d", "BatchNorm2d",
    "Sequential", "ModuleList", "ModuleDict", "ParameterList", "ParameterDict", "ReLU", "GELU", "Tanh",
    "Sigmoid", "SiLU", "Softmax",
    "CrossEntropyLoss", "NLLLoss", "MSELoss", "BCEWithLogitsLoss", "LeakyReLU", "LogSoftmax", "Flatten",
    "functional", "utils",
]

from seqlab.nn import functional, utils  # noqa: E402  (nn.functional and nn.utils without importing them)
