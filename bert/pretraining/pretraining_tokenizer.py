"""The pretraining data's tokenizer: sentences -> flat token ids and row splits, in-graph.

A thin wrapper of fast_tokenization.FastTokenizer (the same tokens and ids
as the original's FullTokenizer) that tokenizes thousands of sentences a call and hands
back NumPy arrays for the workers. Imports TensorFlow: pretraining_generator imports this
module only after its worker pool has started (see there).
"""

import functools

import numpy as np
import tensorflow as tf

from bert import fast_tokenization


# Sentences tokenized per call of the in-graph tokenizer: large enough to amortise the
# call, small enough to keep the ragged intermediates of one call in a few MB.
_TOKENIZE_BATCH = 4096


class _Tokenizer:
  """Sentences -> flat ids + row splits, through fast_tokenization.FastTokenizer (in-graph).

  normalize: None (the original) or "nfc", applied by the tokenizer itself.
  """

  def __init__(self, vocab_file, do_lower_case, normalize=None):
    options = {} if normalize is None else {"normalize": normalize}
    self._fast = fast_tokenization.FastTokenizer(vocab_file, do_lower_case, **options)

  def tokenize(self, sentences):
    """sentences: list[str] -> (flat ids int32 [num_tokens], row splits int64 [n + 1])."""
    flats, lengths = [], []
    for start in range(0, len(sentences), _TOKENIZE_BATCH):
      ragged = self._fast.tokenize_untraced(
          tf.constant(sentences[start:start + _TOKENIZE_BATCH]))
      flats.append(ragged.flat_values.numpy().astype(np.int32))
      lengths.append(np.diff(ragged.row_splits.numpy()))
    flat = np.concatenate(flats) if flats else np.zeros([0], np.int32)
    splits = np.zeros([len(sentences) + 1], np.int64)
    if lengths:
      np.cumsum(np.concatenate(lengths), out=splits[1:])
    return flat, splits


@functools.lru_cache(maxsize=2)
def get_tokenizer(vocab_file, do_lower_case, normalize=None):
  """The in-graph tokenizer for (vocab, case, normalisation), built once per process."""
  # Building the in-graph tokenizer traces a tf.function (seconds); callers that run
  # several generations in one process (tests, benchmarks) build it once.
  return _Tokenizer(vocab_file, do_lower_case, normalize)
