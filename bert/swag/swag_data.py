"""SWAG (Situations With Adversarial Generations): reading the CSV, multiple-choice features.

As in the published SWAG fine-tuning code that followed the paper (Section 4.4):
sentence A is `sent1`, sentence B `sent2 + " " + ending<i>` (every ending continues
sent2), each pair `[CLS] A [SEP] B [SEP]` cut as the original's truncate_seq_pair does.
The CSV is the one the SWAG authors distribute, read with standard quoting (endings hold
commas), its columns found by header name."""

import csv
import dataclasses
from typing import List, Optional

import numpy as np

from bert import metrics
from bert import modeling_config
from bert import tokenization
from bert.utils import atomic_output
from bert.utils import file_io
from bert.utils import paths
from bert.utils import errors

NUM_CHOICES = 4
REQUIRED_COLUMNS = ("sent1", "sent2") + tuple(f"ending{i}" for i in range(NUM_CHOICES))


@dataclasses.dataclass
class SwagExample:
  """One SWAG question: context (sent1), start of the ending (sent2), four endings.

  example_id: the row's `fold-ind` when present (SWAG's own id), else its row number.
  label: index of the right ending, or None for the unlabelled test file.
  """
  example_id: str
  context_sentence: str
  start_ending: str
  endings: List[str]
  label: Optional[int] = None


def _not_utf8(path):
  """The UserError for a file that is not UTF-8, naming its first bad line."""
  data = file_io.read_bytes(path)
  try:
    file_io.decode_text(data)
  except UnicodeDecodeError as exc:
    return errors.UserError(errors.not_utf8_message(path, exc, data))
  return errors.UserError(errors.not_utf8_message(path))


def read_swag_examples(path, require_label=None):
  """Reads a SWAG CSV into SwagExample objects.

  require_label: True (train/dev: the `label` column must be there), False (ignore it),
  None (use it when present). Problems are UserErrors naming file, line and column.
  """
  examples = []
  with file_io.open_text(path) as handle:
    reader = csv.reader(handle)
    try:
      header = next(reader)
    except StopIteration:
      raise errors.UserError(f"{path}: the file is empty") from None
    except csv.Error as exc:
      raise errors.UserError(f"{path}:1: not a CSV file ({exc})") from None
    except UnicodeDecodeError:
      raise _not_utf8(path) from None
    columns = {name.strip(): index for index, name in enumerate(header)}
    missing = [name for name in REQUIRED_COLUMNS if name not in columns]
    if missing:
      raise errors.UserError(
          f"{path}:1: header lacks the SWAG column(s) {', '.join(missing)}; expected "
          f"{','.join(REQUIRED_COLUMNS)}[,label] as in SWAG's train.csv/val.csv/test.csv")
    has_label = "label" in columns
    if require_label and not has_label:
      raise errors.UserError(
          f"{path}:1: no `label` column; training and evaluation need SWAG's "
          "train.csv/val.csv (test.csv has no labels: use it with --do_predict)")
    use_label = has_label and require_label is not False
    id_column = columns.get("fold-ind")
    try:
      for row in reader:
        if not row or all(not cell.strip() for cell in row):
          continue
        line = reader.line_num
        if len(row) < len(header):
          raise errors.UserError(
              f"{path}:{line}: {len(row)} fields, the header has {len(header)} "
              "(an unquoted comma or a line break inside a field?)")
        label = None
        if use_label:
          text = row[columns["label"]].strip()
          if text not in {str(i) for i in range(NUM_CHOICES)}:
            raise errors.UserError(
                f"{path}:{line}: label {text!r} is not one of 0..{NUM_CHOICES - 1}")
          label = int(text)
        example_id = (row[id_column].strip() if id_column is not None
                      and row[id_column].strip() else str(len(examples)))
        examples.append(SwagExample(
            example_id=example_id,
            context_sentence=row[columns["sent1"]],
            start_ending=row[columns["sent2"]],
            endings=[row[columns[f"ending{i}"]] for i in range(NUM_CHOICES)],
            label=label))
    except csv.Error as exc:
      raise errors.UserError(f"{path}:{reader.line_num}: bad CSV ({exc})") from None
    except UnicodeDecodeError:
      raise _not_utf8(path) from None
  if not examples:
    raise errors.UserError(f"{path}: no examples after the header")
  return examples


def swag_file(data_dir, split):
  """SWAG's own file names: train.csv, val.csv (dev), test.csv."""
  name = {"train": "train.csv", "dev": "val.csv", "test": "test.csv"}[split]
  return paths.join(data_dir, name)


def convert_example_to_choices(example, max_seq_length, tokenizer):
  """One example -> int32 arrays [NUM_CHOICES, max_seq_length] (ids, mask, segments)."""
  context_tokens = tokenizer.tokenize(example.context_sentence)
  input_ids = np.zeros((NUM_CHOICES, max_seq_length), np.int32)
  input_mask = np.zeros((NUM_CHOICES, max_seq_length), np.int32)
  segment_ids = np.zeros((NUM_CHOICES, max_seq_length), np.int32)
  for choice, ending in enumerate(example.endings):
    tokens_a = list(context_tokens)
    tokens_b = tokenizer.tokenize(f"{example.start_ending} {ending}")
    # [CLS], [SEP], [SEP] take three positions.
    tokenization.truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
    tokens = ["[CLS]"] + tokens_a + ["[SEP]"] + tokens_b + ["[SEP]"]
    length = len(tokens)
    input_ids[choice, :length] = tokenizer.convert_tokens_to_ids(tokens)
    input_mask[choice, :length] = 1
    segment_ids[choice, len(tokens_a) + 2:length] = 1
  return input_ids, input_mask, segment_ids


def convert_examples_to_features(examples, max_seq_length, tokenizer):
  """SwagExample list -> dict of arrays.

  input_ids, input_mask, segment_ids: int32 [num_examples, NUM_CHOICES, max_seq_length];
  label_ids: int32 [num_examples] (-1 for unlabelled rows).
  """
  modeling_config.check_max_seq_length(max_seq_length, least=5,
                                       needs="[CLS] context [SEP] ending [SEP]")
  ids, masks, segments = [], [], []
  for example in examples:
    a, b, c = convert_example_to_choices(example, max_seq_length, tokenizer)
    ids.append(a)
    masks.append(b)
    segments.append(c)
  return {
      "input_ids": np.stack(ids),
      "input_mask": np.stack(masks),
      "segment_ids": np.stack(segments),
      "label_ids": np.array([-1 if e.label is None else e.label for e in examples],
                            np.int32),
  }


def write_predictions(path, examples, logits):
  """predictions.csv: id, predicted ending, the four probabilities (and the gold label
  when the input had one). logits: float [len(examples), NUM_CHOICES]; probabilities
  are computed in float64."""
  probabilities = metrics.softmax(np.asarray(logits, np.float64))
  with errors.disk_full_names(path), atomic_output.atomic_open(path) as handle:
    writer = csv.writer(handle, lineterminator="\n")
    has_label = any(e.label is not None for e in examples)
    header = ["id", "prediction"] + [f"prob{i}" for i in range(NUM_CHOICES)]
    writer.writerow(header + (["label"] if has_label else []))
    for example, probs in zip(examples, probabilities, strict=True):
      row = [example.example_id, int(np.argmax(probs))] + [f"{p:.6f}" for p in probs]
      if has_label:
        row.append("" if example.label is None else example.label)
      writer.writerow(row)
