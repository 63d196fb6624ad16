"""Multi-label classification data: the label file, the TSV reader, features, results.

Anything that could be read two ways is refused with one line naming file:line: a line
without exactly one tab, a label not in labels.txt or written twice, a test file mixing
two layouts. Features are the classifier's single-text packing, built in Python as
swag_data does; labels become a multi-hot float32 row. docs/multilabel.md gives the
format."""

import dataclasses
from typing import List, Optional

import numpy as np

from bert import metrics
from bert import tokenization
from bert.utils import atomic_output
from bert.utils import paths
from bert.utils import errors
from bert.utils import input_checks

FILES = {"train": "train.tsv", "dev": "dev.tsv", "test": "test.tsv"}
LABELS_FILE = "labels.txt"


@dataclasses.dataclass
class MultiLabelExample:
  """One line: its text, its labels (None where the file has no labels), its line."""
  text: str
  labels: Optional[List[str]]
  line_number: int


def read_label_list(path):
  """labels.txt -> the label names in order. Blank lines are skipped; a name with a
  comma or whitespace inside, or written twice, is a UserError naming file:line."""
  input_checks.check_input_file(path, "labels_file")
  labels, numbers = [], []
  for number, line in input_checks.read_text_lines(path):
    name = line.strip()
    if not name:
      continue
    if "," in name or len(name.split()) != 1:
      raise errors.UserError(
          f"{path}:{number}: label {name!r} has a comma or a space; labels are single "
          "words (they are written comma-separated and name the per-label F1 keys)")
    labels.append(name)
    numbers.append(number)
  repeat = input_checks.first_repeat(labels)
  if repeat:
    first, again = repeat
    raise errors.UserError(f"{path}:{numbers[again]}: label {labels[again]!r} is "
                                 f"listed twice (first on line {numbers[first]})")
  if not labels:
    raise errors.UserError(f"{path}: no labels (expected one label per line)")
  return labels


def _parse_labels(field, label_list, where):
  names = [name.strip() for name in field.split(",")] if field.strip() else []
  for name in names:
    if not name:
      raise errors.UserError(f"{where}: empty label in {field!r} (two commas?)")
    if name not in label_list:
      raise errors.UserError(
          f"{where}: unknown label {name!r}; labels_file has {', '.join(label_list)}"
          + (" (a header line? these files have none)" if where.endswith(":1") else ""))
  if len(set(names)) != len(names):
    raise errors.UserError(f"{where}: a label is written twice in {field!r}")
  return names


def read_examples(path, label_list, require_labels=True):
  """A train/dev/test TSV -> MultiLabelExample list.

  The format, in data_dir: labels.txt, one label per line, in output order (the head's
  row i is line i); train.tsv and dev.tsv, `text<TAB>labels` with the labels
  comma-separated from labels.txt, possibly empty (an example with no label), no header
  line; test.tsv, the text alone on every line or text<TAB>labels on every line.

  require_labels: True for train/dev (every line is text<TAB>labels); False for test
  (text alone, or text<TAB>labels, the same on every line; labels are then kept).
  """
  examples, layout = [], None
  for number, line in input_checks.read_text_lines(path):
    line = line.rstrip("\r\n")
    if not line.strip():
      continue
    fields = line.split("\t")
    where = f"{path}:{number}"
    if len(fields) > 2 or (require_labels and len(fields) != 2):
      raise errors.UserError(
          f"{where}: {len(fields)} tab-separated fields, expected text<TAB>labels"
          + ("" if require_labels else " or text alone")
          + " (an example without labels ends with a tab; a tab inside the text?)")
    layout = layout or len(fields)
    if len(fields) != layout:
      raise errors.UserError(
          f"{where}: {len(fields)} tab-separated fields, the file's first line has "
          f"{layout}; test lines are all text or all text<TAB>labels")
    if not fields[0].strip():
      raise errors.UserError(f"{where}: the text is empty")
    labels = _parse_labels(fields[1], label_list, where) if len(fields) == 2 else None
    examples.append(MultiLabelExample(fields[0], labels, number))
  if not examples:
    raise errors.UserError(f"{path}: no examples")
  return examples


def label_matrix(examples, label_list):
  """float32 [len(examples), len(label_list)]: 1 where the example has the label
  (all 0 for an example without labels)."""
  index = {name: i for i, name in enumerate(label_list)}
  matrix = np.zeros((len(examples), len(label_list)), np.float32)
  for row, example in enumerate(examples):
    for name in example.labels or ():
      matrix[row, index[name]] = 1.0
  return matrix


def convert_examples_to_features(examples, label_list, max_seq_length, tokenizer):
  """MultiLabelExample list -> input_ids, input_mask, segment_ids int32
  [N, max_seq_length] (zero-padded) and label_ids float32 [N, num_labels]."""
  ids = np.zeros((len(examples), max_seq_length), np.int32)
  mask = np.zeros_like(ids)
  for row, example in enumerate(examples):
    tokens, _ = tokenization.pack_tokens(tokenizer.tokenize(example.text), None,
                                         max_seq_length)
    ids[row, :len(tokens)] = tokenizer.convert_tokens_to_ids(tokens)
    mask[row, :len(tokens)] = 1
  return {"input_ids": ids, "input_mask": mask, "segment_ids": np.zeros_like(ids),
          "label_ids": label_matrix(examples, label_list)}


# A label is predicted where its probability is at least this (--threshold's default; a
# trained model's own is in its head_info and its LiteRT model.json).
THRESHOLD = 0.5


def check_threshold(threshold):
  """A UserError unless 0 < threshold < 1 (0 or 1 would predict every label or none)."""
  if not 0.0 < threshold < 1.0:
    raise errors.UserError(f"--threshold={threshold}: must be between 0 and 1")


def decode(probabilities, threshold):
  """int32 [N, num_labels]: 1 where a probability is >= threshold."""
  return (np.asarray(probabilities) >= threshold).astype(np.int32)


def write_results(path, label_list, probabilities, threshold):
  """test_results.tsv: a header `labels<TAB>name...`, then per line of the input its
  predicted labels (comma-separated, empty for none) and each label's probability."""
  predictions = decode(probabilities, threshold)
  with atomic_output.atomic_open(path) as handle:
    handle.write("\t".join(["labels"] + list(label_list)) + "\n")
    for probs, chosen in zip(probabilities, predictions, strict=True):
      names = ",".join(name for name, on in zip(label_list, chosen) if on)
      handle.write("\t".join([names] + [f"{p:.6f}" for p in probs]) + "\n")


def data_file(data_dir, split):
  return paths.join(data_dir, FILES[split])


def eval_values(logits, labels, label_list, threshold):
  """eval_results.txt's values of one dev set from its logits float [N, K] and
  multi-hot labels [N, K]: eval_loss (mean over examples of the mean sigmoid
  cross-entropy over labels, the training loss), eval_accuracy (subset accuracy),
  micro/macro F1 and per-label F1 (metrics.multi_label_metrics)."""
  logits = np.asarray(logits, np.float64)
  predictions = decode(metrics.sigmoid(logits), threshold)
  values = metrics.multi_label_metrics(predictions, labels, label_list)
  values["eval_accuracy"] = values.pop("subset_accuracy")
  values["eval_loss"] = float(np.mean(metrics.sigmoid_cross_entropy(logits, labels)))
  return values
