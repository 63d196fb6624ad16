"""BERT on TensorFlow 2 / Keras 3: Google's original release, as a library.

Importing `bert` loads nothing heavy (no TensorFlow): import the module you need, for
example `from bert import modeling, tokenization, optimization` (docs/library.md).
`python -m bert` says which distribution this `bert` is: the import name is also used by
other packages (the original's TF1 `bert-tensorflow`, `bert-for-tf2`).
"""

__version__ = "0.1.0"
# The name pip knows this package by (pip show bert-tensorflow2).
DISTRIBUTION = "bert-tensorflow2"
