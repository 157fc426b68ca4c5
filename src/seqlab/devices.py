"""`seqlab.device`: torch's device object, and what the ``torch.cuda`` and ``torch.backends`` code people
copy asks of it.

A device is also the string it names (``device("cuda") == "cuda"``), so everything that took "cpu" or
"cuda" before takes it, and ``tensor.device`` compares with both.
"""
from __future__ import annotations

from seqlab import backend


class device(str):  # noqa: N801  (torch's name)
    """``seqlab.device("cpu")``, ``device("cuda")``, ``device("cuda:0")``, ``device("cuda", 0)``, ``device(0)``.
    ``device("cuda:1")`` can be named, as torch's (d2l's first GPU cell); moving a tensor there is refused, since
    seqlab drives one GPU.

    ``.type`` is "cpu" or "cuda" and ``.index`` the GPU's number or None, as torch's. ``with device("cuda"):``
    creates new tensors there, as torch's."""

    def __new__(cls, type: "str | device | int", index: int | None = None) -> "device":  # noqa: A002
        if isinstance(type, device) and index is None:
            return type
        if isinstance(type, int) and not isinstance(type, bool):
            type, index = "cuda", type
        if not isinstance(type, str):
            type = backend.from_torch_name(type)  # a torch.device
        if index is not None:
            if ":" in type:
                raise ValueError(f"type (string) must not include an index because index was passed "
                                 f"explicitly: {type}")
            type = f"{type}:{index}"
        kind, _, number = type.partition(":")
        if number and not number.isdigit():
            raise ValueError(f"invalid device string {type!r}: the index after ':' must be a number")
        backend.device_name(kind)  # validates the kind: "cpu" or "cuda"; an index > 0 is refused where it is used
        obj = super().__new__(cls, type)
        obj.type = kind
        obj.index = int(number) if number else None
        return obj

    def __repr__(self) -> str:
        if self.index is None:
            return f"device(type='{self.type}')"
        return f"device(type='{self.type}', index={self.index})"

    def __reduce__(self):
        return device, (str(self),)

    def __enter__(self) -> "device":
        self._previous = backend.get_device()
        backend.set_device(self.type)
        return self

    def __exit__(self, *exc) -> None:
        backend.set_device(self._previous)


CPU, CUDA = device("cpu"), device("cuda")
