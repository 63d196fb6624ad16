"""BERT on TensorFlow 2 / Keras 3: Google's original release, as a library.

Importing `bert` loads nothing heavy (no TensorFlow): import the module you need,
for example `from bert import modeling, tokenization, optimization`.
"""
