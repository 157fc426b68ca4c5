"""Errors a user can cause. Each names the offending file, option or value.

They subclass the built-in exception a Python user would expect
(`ValueError`, `OSError`), so ``except ValueError`` keeps working, and the CLI
turns every `SeqlabError` into one line on stderr.
"""


class SeqlabError(Exception):
    """Base class of every error seqlab raises on purpose."""


class DataError(SeqlabError, ValueError):
    """A dataset file is missing, malformed, or fails its checksum."""


class ChecksumError(DataError):
    """A file's sha256 differs from the expected one; the file is not used."""


class CheckpointError(SeqlabError, ValueError):
    """A model folder or training checkpoint is missing, truncated or does not match."""


class StateDictError(CheckpointError, RuntimeError):
    """A state dict that does not fit a module (missing or unexpected names, shapes): a CheckpointError,
    and a RuntimeError as torch's `load_state_dict` raises, so `except RuntimeError` catches it too."""


class ShapeError(SeqlabError, ValueError, RuntimeError):
    """Shapes that do not fit an op (a product's inner dims, a reshape's count, operands that do not
    broadcast): a ValueError, and a RuntimeError as torch raises, so torch code's `except RuntimeError`
    catches it too."""


class ConfigError(SeqlabError, ValueError):
    """A configuration value is invalid or two options conflict."""
