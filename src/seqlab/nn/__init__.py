"""Layers with torch.nn's names, arguments and parameter names."""
from seqlab.nn import init
from seqlab.nn.activation import GELU, ReLU, Sigmoid, SiLU, Softmax, Tanh
from seqlab.nn.container import ModuleDict, ModuleList, Sequential
from seqlab.nn.dropout import Dropout
from seqlab.nn.linear import Identity, Linear
from seqlab.nn.module import Module, Parameter
from seqlab.nn.norm import LayerNorm, RMSNorm
from seqlab.nn.sparse import Embedding

__all__ = [
    "init", "Module", "Parameter", "Linear", "Identity", "Embedding", "LayerNorm", "RMSNorm", "Dropout",
    "Sequential", "ModuleList", "ModuleDict", "ReLU", "GELU", "Tanh", "Sigmoid", "SiLU", "Softmax",
]
