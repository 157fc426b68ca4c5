"""torch.utils's names: `seqlab.utils.data` (Dataset, TensorDataset, DataLoader, random_split) and
`seqlab.utils.checkpoint` (checkpoint, checkpoint_sequential)."""
from seqlab.utils import checkpoint, data

__all__ = ["checkpoint", "data"]
