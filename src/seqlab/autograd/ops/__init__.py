"""The primitive ops, one class each, forward and backward on arrays."""
