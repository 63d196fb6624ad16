"""A straightforward single-process, pure-Python generator of BERT pretraining data.

The yardstick for create_pretraining_data.py's faithfulness: the original release's
algorithm written plainly on token strings, with `tokenization.FullTokenizer`,
`random.Random`'s own `random()`, `randint()` and `shuffle()`, the whole corpus in memory
and one protobuf object per example. Used by tests/pretraining/test_pretraining_generator.py
(instance by instance). Speed is measured against the original's own generator instead
(benchmarks/bench_pretraining_data.py).

Examples are serialized with `deterministic=True` (features in key order) so that they
can be compared byte for byte with ours; the original calls SerializeToString() plainly,
which holds the same features in an unspecified order.
"""

import collections
import random

Instance = collections.namedtuple(
    "Instance", ["tokens", "segment_ids", "masked_lm_positions", "masked_lm_labels",
                 "is_random_next"])


def read_corpus(input_files, tokenizer):
  """Tokenized documents: a blank line ends a document (not the end of a file)."""
  documents = [[]]
  for path in input_files:
    with open(path, encoding="utf-8") as handle:
      for line in handle:
        line = line.strip()
        if not line:
          documents.append([])
        tokens = tokenizer.tokenize(line)
        if tokens:
          documents[-1].append(tokens)
  return [d for d in documents if d]


def _truncate_pair(tokens_a, tokens_b, max_num_tokens, rng):
  while len(tokens_a) + len(tokens_b) > max_num_tokens:
    longer = tokens_a if len(tokens_a) > len(tokens_b) else tokens_b
    if rng.random() < 0.5:
      del longer[0]
    else:
      longer.pop()


def _mask(tokens, masked_lm_prob, max_predictions_per_seq, vocab_words, rng,
          do_whole_word_mask):
  candidates = []
  for position, token in enumerate(tokens):
    if token in ("[CLS]", "[SEP]"):
      continue
    if do_whole_word_mask and candidates and token.startswith("##"):
      candidates[-1].append(position)
    else:
      candidates.append([position])
  rng.shuffle(candidates)
  output = list(tokens)
  budget = min(max_predictions_per_seq, max(1, int(round(len(tokens) * masked_lm_prob))))
  chosen = []
  covered = set()
  for group in candidates:
    if len(chosen) >= budget:
      break
    if len(chosen) + len(group) > budget:
      continue
    if any(p in covered for p in group):
      continue
    for position in group:
      covered.add(position)
      if rng.random() < 0.8:
        replacement = "[MASK]"
      elif rng.random() < 0.5:
        replacement = tokens[position]
      else:
        replacement = vocab_words[rng.randint(0, len(vocab_words) - 1)]
      output[position] = replacement
      chosen.append((position, tokens[position]))
  chosen.sort()
  return output, [p for p, _ in chosen], [t for _, t in chosen]


def _instances_from_document(documents, index, max_seq_length, short_seq_prob,
                             masked_lm_prob, max_predictions_per_seq, vocab_words, rng,
                             do_whole_word_mask):
  document = documents[index]
  max_num_tokens = max_seq_length - 3
  target = max_num_tokens
  if rng.random() < short_seq_prob:
    target = rng.randint(2, max_num_tokens)
  instances = []
  chunk, chunk_length, i = [], 0, 0
  while i < len(document):
    chunk.append(document[i])
    chunk_length += len(document[i])
    if i == len(document) - 1 or chunk_length >= target:
      a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
      tokens_a = [t for sentence in chunk[:a_end] for t in sentence]
      tokens_b = []
      if len(chunk) == 1 or rng.random() < 0.5:
        is_random_next = True
        for _ in range(10):
          other = rng.randint(0, len(documents) - 1)
          if other != index:
            break
        other_document = documents[other]
        for sentence in other_document[rng.randint(0, len(other_document) - 1):]:
          tokens_b.extend(sentence)
          if len(tokens_b) >= target - len(tokens_a):
            break
        i -= len(chunk) - a_end
      else:
        is_random_next = False
        tokens_b = [t for sentence in chunk[a_end:] for t in sentence]
      _truncate_pair(tokens_a, tokens_b, max_num_tokens, rng)
      tokens = ["[CLS]"] + tokens_a + ["[SEP]"] + tokens_b + ["[SEP]"]
      segment_ids = [0] * (len(tokens_a) + 2) + [1] * (len(tokens_b) + 1)
      tokens, positions, labels = _mask(tokens, masked_lm_prob, max_predictions_per_seq,
                                        vocab_words, rng, do_whole_word_mask)
      instances.append(Instance(tokens, segment_ids, positions, labels, is_random_next))
      chunk, chunk_length = [], 0
    i += 1
  return instances


def create_instances(documents, vocab_words, rng, max_seq_length=128, dupe_factor=10,
                     short_seq_prob=0.1, masked_lm_prob=0.15, max_predictions_per_seq=20,
                     do_whole_word_mask=False):
  """The whole corpus at once: shuffle documents, dupe_factor passes, shuffle instances."""
  rng.shuffle(documents)
  instances = []
  for _ in range(dupe_factor):
    for index in range(len(documents)):
      instances.extend(_instances_from_document(
          documents, index, max_seq_length, short_seq_prob, masked_lm_prob,
          max_predictions_per_seq, vocab_words, rng, do_whole_word_mask))
  rng.shuffle(instances)
  return instances


def to_example(instance, vocab, max_seq_length, max_predictions_per_seq):
  """A tf.train.Example with the original's seven padded features."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top

  def ints(values):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))

  input_ids = [vocab[t] for t in instance.tokens]
  pad = max_seq_length - len(input_ids)
  n = len(instance.masked_lm_positions)
  mask_pad = max_predictions_per_seq - n
  features = {
      "input_ids": ints(input_ids + [0] * pad),
      "input_mask": ints([1] * len(input_ids) + [0] * pad),
      "segment_ids": ints(list(instance.segment_ids) + [0] * pad),
      "masked_lm_positions": ints(list(instance.masked_lm_positions) + [0] * mask_pad),
      "masked_lm_ids": ints([vocab[t] for t in instance.masked_lm_labels] + [0] * mask_pad),
      "masked_lm_weights": tf.train.Feature(
          float_list=tf.train.FloatList(value=[1.0] * n + [0.0] * mask_pad)),
      "next_sentence_labels": ints([1 if instance.is_random_next else 0]),
  }
  return tf.train.Example(features=tf.train.Features(feature=features))


def generate(input_files, output_files, vocab_file, do_lower_case=True,
             do_whole_word_mask=False, max_seq_length=128, max_predictions_per_seq=20,
             random_seed=12345, dupe_factor=10, masked_lm_prob=0.15, short_seq_prob=0.1):
  """End to end, as the original main(); returns the number of examples written."""
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  from bert import tokenization  # pylint: disable=g-import-not-at-top
  tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case)
  rng = random.Random(random_seed)
  documents = read_corpus(input_files, tokenizer)
  instances = create_instances(
      documents, list(tokenizer.vocab.keys()), rng, max_seq_length, dupe_factor,
      short_seq_prob, masked_lm_prob, max_predictions_per_seq, do_whole_word_mask)
  writers = [tf.io.TFRecordWriter(path) for path in output_files]
  for number, instance in enumerate(instances):
    example = to_example(instance, tokenizer.vocab, max_seq_length, max_predictions_per_seq)
    writers[number % len(writers)].write(example.SerializeToString(deterministic=True))
  for writer in writers:
    writer.close()
  return len(instances)
