"""torch.utils's names: `seqlab.utils.data` (Dataset, TensorDataset, DataLoader, random_split)."""
from seqlab.utils import data

__all__ = ["data"]
