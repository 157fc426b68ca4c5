"""Interop with Hugging Face folders: safetensors I/O, configs, key maps, from/save_pretrained.

    from seqlab.hub import load_file, save_file, resolve
    state = load_file("model.safetensors")        # name -> numpy array, every offset checked
    folder = resolve("minilm")                    # the bundled all-MiniLM-L6-v2 folder
"""
from seqlab.hub.config import HF_ACTIVATIONS, HFConfig, activation
from seqlab.hub.keymap import KeyMap
from seqlab.hub.pretrained import (
    PRETRAINED_NAMES,
    LoadingInfo,
    PreTrainedModel,
    export_state,
    load_weights,
    read_config,
    read_weights,
    resolve,
)
from seqlab.hub.safetensors import load_file, read_header, save_file

__all__ = [
    "HFConfig", "HF_ACTIVATIONS", "activation", "KeyMap", "PRETRAINED_NAMES", "LoadingInfo", "PreTrainedModel",
    "export_state", "load_weights", "read_config", "read_weights", "resolve", "load_file", "read_header",
    "save_file",
]
