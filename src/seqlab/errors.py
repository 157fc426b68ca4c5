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


class ConfigError(SeqlabError, ValueError):
    """A configuration value is invalid or two options conflict."""
