"""`import modeling` from a clone, as the original's users write it: the same module object
as `bert.modeling` (so anything set on one is seen through the other)."""

import sys

from bert import modeling

sys.modules[__name__] = modeling
