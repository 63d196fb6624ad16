"""`import tokenization` from a clone, as the original's users write it: the same module object
as `bert.tokenization` (so anything set on one is seen through the other)."""

import sys

from bert import tokenization

sys.modules[__name__] = tokenization
