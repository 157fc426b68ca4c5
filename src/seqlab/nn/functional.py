"""``import seqlab.nn.functional as F``, as with torch.nn.functional: the very module `seqlab.functional`."""
import sys

from seqlab import functional as _functional

sys.modules[__name__] = _functional
