"""`import optimization` from a clone, as the original's users write it: the same module object
as `bert.optimization` (so anything set on one is seen through the other)."""

import sys

from bert import optimization

sys.modules[__name__] = optimization
