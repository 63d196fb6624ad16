"""GLUE / XNLI / user TSV classification data: examples, processors, features, metrics.

Middle floor. Imports tokenization (ground) and script_utils; never reads absl FLAGS.

The original's pattern is kept: a task is a `DataProcessor` subclass with
`get_train_examples`, `get_dev_examples`, `get_test_examples` and `get_labels`, and
`PROCESSORS` maps `--task_name` to it. Most GLUE tasks only differ by which columns hold
the texts and the label, so `GlueTsvProcessor` reads a split from a small table of column
numbers; adding a task is a class of a few lines (see `RteProcessor`).

Files are read exactly as GLUE distributes them: tab-separated, csv quoting off (MRPC's
sentences hold unbalanced double quotes that a quoting reader would swallow across lines),
a UTF-8 byte-order mark tolerated at the start (MRPC train/dev), a header line except in
CoLA train/dev. Every problem a user can fix (missing file, short row, unknown label,
empty split) is a `script_utils.UserError` naming the file and line.

Features come two ways, with identical token ids:
  * `make_dataset(...)`: the fast path. Texts go into tf.data, `tokenization.FastTokenizer`
    and `tokenization.pack_inputs` run in the graph, and each batch is padded only to its
    own longest row (bucketing by length while training, sorting inside a window for
    eval/predict) unless `fixed_padding` asks for `max_seq_length` (TPUs want static shapes).
  * `convert_single_example(...)`: the original's Python conversion with FullTokenizer,
    kept as the reference the fast path is tested against.

Metrics are the ones GLUE reports, in NumPy: Matthews correlation (CoLA), accuracy and
F1 (MRPC, QQP), Pearson and Spearman with average ranks for ties (STS-B), accuracy elsewhere.
"""

import csv
import dataclasses
import io
import os
import sys
from typing import Optional

import numpy as np

import script_utils
import tokenization

UserError = script_utils.UserError


# --------------------------------------------------------------------------- examples


@dataclasses.dataclass
class InputExample:
  """A single training/test example for simple sequence classification.

  guid: unique id, "<split>-<row>" (the test file's own index for test rows).
  text_a: the untokenized first sequence. text_b: the second one, for pair tasks.
  label: the label string (a float for regression tasks); None for unlabelled test rows.
  """
  guid: str
  text_a: str
  text_b: Optional[str] = None
  label: Optional[object] = None


@dataclasses.dataclass
class InputFeatures:
  """A single set of features of data (the original's names)."""
  input_ids: list
  input_mask: list
  segment_ids: list
  label_id: object
  is_real_example: bool = True


@dataclasses.dataclass
class EvalSet:
  """One labelled split to evaluate. `key_prefix` goes in front of the metric names in
  eval_results.txt ("eval_" for the main dev set, "eval_mismatched_" for MNLI's second)."""
  name: str
  examples: list
  key_prefix: str = "eval_"


@dataclasses.dataclass
class PredictSet:
  """One split to predict. `results_file` is the original's class-probability file;
  `submission_file` the name the GLUE server expects (None outside GLUE)."""
  name: str
  examples: list
  results_file: str = "test_results.tsv"
  submission_file: Optional[str] = None


# --------------------------------------------------------------------------- reading


def _is_remote(path):
  return "://" in str(path)


def read_delimited(path, delimiter="\t", quoting=csv.QUOTE_NONE):
  """Returns [(line_number, fields)] of a delimited UTF-8 file; line numbers start at 1.

  Quoting is off by default (GLUE's files need it off); `quoting=csv.QUOTE_MINIMAL`
  reads ordinary CSV with "..." fields. A leading UTF-8 byte-order mark is dropped.
  Blank lines are skipped (they carry no row).
  """
  if _is_remote(path):
    import tensorflow as tf  # pylint: disable=g-import-not-at-top
    if not tf.io.gfile.exists(path):
      raise UserError(f"{path}: no such file; check --data_dir")
    with tf.io.gfile.GFile(path, "rb") as handle:
      data = handle.read()
  else:
    if not os.path.exists(path):
      raise UserError(f"{path}: no such file; check --data_dir")
    if os.path.isdir(path):
      raise UserError(f"{path}: is a directory, expected a file")
    with open(path, "rb") as handle:
      data = handle.read()
  try:
    text = data.decode("utf-8-sig")
  except UnicodeDecodeError as exc:
    line = data[:exc.start].count(b"\n") + 1
    raise UserError(f"{path}:{line}: not valid UTF-8 (byte {exc.start}); "
                    "convert the file to UTF-8") from None
  kwargs = {"delimiter": delimiter, "quoting": quoting}
  if quoting == csv.QUOTE_NONE:
    kwargs["quotechar"] = None
  csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
  # Rows end at \n, \r\n or \r only, as when the original iterated over the file;
  # str.splitlines() would also end a row inside a sentence at \x0b, \x0c, \x1c-\x1e,
  # \x85, U+2028 or U+2029 (tests/test_fuzz_readers.py).
  reader = csv.reader(io.StringIO(text, newline=""), **kwargs)
  rows = []
  try:
    for fields in reader:
      if fields:
        rows.append((reader.line_num, fields))
  except csv.Error as exc:
    raise UserError(f"{path}:{reader.line_num}: cannot parse the row ({exc})") from None
  return rows


def _field(path, number, fields, column, what):
  if column >= len(fields) or column < -len(fields):
    raise UserError(
        f"{path}:{number}: too few columns: the {what} is column "
        f"{column if column >= 0 else len(fields) + column} (0-based) but the row has "
        f"{len(fields)}; check the delimiter and that each row is on one line")
  return fields[column]


# --------------------------------------------------------------------------- processors


class DataProcessor:
  """Base class for data converters for sequence classification data sets.

  A subclass implements get_train_examples, get_dev_examples, get_test_examples and
  get_labels (the original's four methods). Tasks with several dev or test files (MNLI)
  override get_eval_sets / get_predict_sets.
  """

  # "accuracy", "accuracy_f1", "matthews" or "pearson_spearman" (see compute_metrics).
  metric = "accuracy"
  is_regression = False
  # The GLUE server's file name for this task's test predictions (None: not a GLUE task).
  submission_file = None

  def get_train_examples(self, data_dir):
    """Gets a collection of `InputExample`s for the train set."""
    raise NotImplementedError()

  def get_dev_examples(self, data_dir):
    """Gets a collection of `InputExample`s for the dev set."""
    raise NotImplementedError()

  def get_test_examples(self, data_dir):
    """Gets a collection of `InputExample`s for prediction."""
    raise NotImplementedError()

  def get_labels(self):
    """Gets the list of labels for this data set (None for regression)."""
    raise NotImplementedError()

  def get_eval_sets(self, data_dir):
    return [EvalSet("dev", self.get_dev_examples(data_dir))]

  def get_predict_sets(self, data_dir):
    return [PredictSet("test", self.get_test_examples(data_dir),
                       submission_file=self.submission_file)]

  @property
  def num_texts(self):
    """1 for single-sentence tasks, 2 for sentence pairs."""
    return 1

  @property
  def num_outputs(self):
    return 1 if self.is_regression else len(self.get_labels())

  def format_prediction(self, value):
    """A prediction (label index, or a float for regression) as the GLUE server wants it."""
    if self.is_regression:
      return f"{float(value):.3f}"
    return self.get_labels()[int(value)]


# Column layout of one split: texts, label, and the id column that names the guid
# ("<split>-<id>"; without one the guid is "<split>-<row number>"). None: absent.
@dataclasses.dataclass(frozen=True)
class Columns:
  text_a: int
  text_b: Optional[int] = None
  label: Optional[int] = None
  index: Optional[int] = None
  header: bool = True


class GlueTsvProcessor(DataProcessor):
  """A GLUE task whose splits are <data_dir>/{train,dev,test}.tsv with fixed columns.

  Subclasses set `labels`, `train_columns` (also used for dev unless `dev_columns`),
  `test_columns` and `submission_file`.
  """
  labels = ("0", "1")
  train_file = "train.tsv"
  dev_file = "dev.tsv"
  test_file = "test.tsv"
  train_columns = None
  dev_columns = None
  test_columns = None

  def get_labels(self):
    return None if self.is_regression else list(self.labels)

  @property
  def num_texts(self):
    return 1 if self.train_columns.text_b is None else 2

  def get_train_examples(self, data_dir):
    return self.read_split(os.path.join(data_dir, self.train_file), "train",
                           self.train_columns)

  def get_dev_examples(self, data_dir):
    return self.read_split(os.path.join(data_dir, self.dev_file), "dev",
                           self.dev_columns or self.train_columns)

  def get_test_examples(self, data_dir):
    return self.read_split(os.path.join(data_dir, self.test_file), "test",
                           self.test_columns, labelled=False)

  def read_split(self, path, set_type, columns, labelled=True, delimiter="\t",
                 quoting=csv.QUOTE_NONE):
    """Reads one split; fails on a short row, an unknown label or an empty file."""
    rows = read_delimited(path, delimiter=delimiter, quoting=quoting)
    if columns.header and rows:
      rows = rows[1:]
    label_set = None if self.is_regression else set(self.get_labels())
    examples = []
    for i, (number, fields) in enumerate(rows, start=1 if columns.header else 0):
      text_a = _field(path, number, fields, columns.text_a, "first text")
      text_b = (None if columns.text_b is None else
                _field(path, number, fields, columns.text_b, "second text"))
      label = None
      if labelled:
        label = _field(path, number, fields, columns.label, "label")
        label = self._check_label(path, number, label, label_set)
      if columns.index is not None:
        guid = f"{set_type}-{_field(path, number, fields, columns.index, 'index')}"
      else:
        guid = f"{set_type}-{i}"
      examples.append(InputExample(guid=guid, text_a=text_a, text_b=text_b, label=label))
    if not examples:
      raise UserError(f"{path}: no examples in the {set_type} split "
                      "(the file has no data rows)")
    return examples

  def _check_label(self, path, number, label, label_set):
    if self.is_regression:
      try:
        return float(label)
      except ValueError:
        raise UserError(f"{path}:{number}: label {label!r} is not a number "
                        "(this is a regression task)") from None
    if label not in label_set:
      raise UserError(f"{path}:{number}: unknown label {label!r}; this task's labels are "
                      f"{', '.join(self.get_labels())}")
    return label


class ColaProcessor(GlueTsvProcessor):
  """CoLA: train/dev have no header, label in column 1, sentence in 3; test: index, sentence."""
  metric = "matthews"
  submission_file = "CoLA.tsv"
  train_columns = Columns(text_a=3, label=1, header=False)
  test_columns = Columns(text_a=1, index=0)


class Sst2Processor(GlueTsvProcessor):
  """SST-2: sentence, label (header); test: index, sentence."""
  submission_file = "SST-2.tsv"
  train_columns = Columns(text_a=0, label=1)
  test_columns = Columns(text_a=1, index=0)


class MrpcProcessor(GlueTsvProcessor):
  """MRPC: Quality, #1 ID, #2 ID, #1 String, #2 String (BOM on train/dev)."""
  metric = "accuracy_f1"
  submission_file = "MRPC.tsv"
  train_columns = Columns(text_a=3, text_b=4, label=0)
  test_columns = Columns(text_a=3, text_b=4, index=0)


class StsbProcessor(GlueTsvProcessor):
  """STS-B: sentences in columns 7 and 8, the 0-5 similarity score in 9 (regression)."""
  metric = "pearson_spearman"
  is_regression = True
  submission_file = "STS-B.tsv"
  train_columns = Columns(text_a=7, text_b=8, label=9)
  test_columns = Columns(text_a=7, text_b=8, index=0)


class QqpProcessor(GlueTsvProcessor):
  """QQP: id, qid1, qid2, question1, question2, is_duplicate; test: id, question1, question2."""
  metric = "accuracy_f1"
  submission_file = "QQP.tsv"
  train_columns = Columns(text_a=3, text_b=4, label=5)
  test_columns = Columns(text_a=1, text_b=2, index=0)


class QnliProcessor(GlueTsvProcessor):
  """QNLI: index, question, sentence, label."""
  labels = ("entailment", "not_entailment")
  submission_file = "QNLI.tsv"
  train_columns = Columns(text_a=1, text_b=2, label=3)
  test_columns = Columns(text_a=1, text_b=2, index=0)


class RteProcessor(QnliProcessor):
  """RTE: index, sentence1, sentence2, label (same layout and labels as QNLI)."""
  submission_file = "RTE.tsv"


class WnliProcessor(GlueTsvProcessor):
  """WNLI: index, sentence1, sentence2, label (0/1)."""
  submission_file = "WNLI.tsv"
  train_columns = Columns(text_a=1, text_b=2, label=3)
  test_columns = Columns(text_a=1, text_b=2, index=0)


class MnliProcessor(GlueTsvProcessor):
  """MNLI: texts in columns 8 and 9, gold label last; two dev and two test files, plus AX.

  The diagnostic set AX (index, sentence1, sentence2) is predicted with the MNLI model;
  it is looked for as <data_dir>/{ax,AX,diagnostic}.tsv, <data_dir>/../{ax,AX}.tsv or
  <data_dir>/../diagnostic/diagnostic.tsv (download_glue_data.py's layout) and skipped,
  with a warning, when absent.
  """
  labels = ("contradiction", "entailment", "neutral")
  submission_file = "MNLI-m.tsv"
  dev_file = "dev_matched.tsv"
  test_file = "test_matched.tsv"
  # The original's MNLI guid is "<split>-<index column>".
  train_columns = Columns(text_a=8, text_b=9, label=-1, index=0)
  test_columns = Columns(text_a=8, text_b=9, index=0)
  ax_columns = Columns(text_a=1, text_b=2, index=0)

  def get_dev_examples(self, data_dir):
    return self.read_split(os.path.join(data_dir, "dev_matched.tsv"), "dev_matched",
                           self.train_columns)

  def get_dev_mismatched_examples(self, data_dir):
    return self.read_split(os.path.join(data_dir, "dev_mismatched.tsv"),
                           "dev_mismatched", self.train_columns)

  def get_test_examples(self, data_dir):
    return self.read_split(os.path.join(data_dir, "test_matched.tsv"), "test_matched",
                           self.test_columns, labelled=False)

  def get_test_mismatched_examples(self, data_dir):
    return self.read_split(os.path.join(data_dir, "test_mismatched.tsv"),
                           "test_mismatched", self.test_columns, labelled=False)

  @staticmethod
  def find_ax_file(data_dir):
    for candidate in (os.path.join(data_dir, "ax.tsv"), os.path.join(data_dir, "AX.tsv"),
                      os.path.join(data_dir, "diagnostic.tsv"),
                      os.path.join(data_dir, os.pardir, "ax.tsv"),
                      os.path.join(data_dir, os.pardir, "AX.tsv"),
                      os.path.join(data_dir, os.pardir, "diagnostic", "diagnostic.tsv"),
                      os.path.join(data_dir, os.pardir, "AX", "test.tsv")):
      if os.path.exists(candidate):
        return os.path.normpath(candidate)
    return None

  def get_ax_examples(self, data_dir):
    path = self.find_ax_file(data_dir)
    if path is None:
      return None
    return self.read_split(path, "ax", self.ax_columns, labelled=False)

  def get_eval_sets(self, data_dir):
    return [EvalSet("dev_matched", self.get_dev_examples(data_dir), "eval_"),
            EvalSet("dev_mismatched", self.get_dev_mismatched_examples(data_dir),
                    "eval_mismatched_")]

  def get_predict_sets(self, data_dir):
    sets = [PredictSet("test_matched", self.get_test_examples(data_dir),
                       "test_results.tsv", "MNLI-m.tsv"),
            PredictSet("test_mismatched", self.get_test_mismatched_examples(data_dir),
                       "test_results_mismatched.tsv", "MNLI-mm.tsv")]
    ax = self.get_ax_examples(data_dir)
    if ax is not None:
      sets.append(PredictSet("ax", ax, "test_results_ax.tsv", "AX.tsv"))
    return sets


class XnliProcessor(DataProcessor):
  """XNLI: train on the machine-translated MultiNLI of one language, dev on XNLI-1.0.

  Train: <data_dir>/multinli/multinli.train.<lang>.tsv (premise, hypo, label; header),
  "contradictory" read as "contradiction" as the original did. Dev/test:
  <data_dir>/xnli.{dev,test}.tsv, rows of other languages skipped, label in column 1,
  texts in 6 and 7. The XNLI-MT-1.0/ and XNLI-1.0/ subfolders of the official archives
  are also looked in, so data_dir may hold both archives unpacked side by side.
  """
  labels = ("contradiction", "entailment", "neutral")

  num_texts = 2

  def __init__(self, language="zh"):
    self.language = language

  def get_labels(self):
    return list(self.labels)

  @staticmethod
  def _find(data_dir, candidates):
    for candidate in candidates:
      path = os.path.join(data_dir, *candidate)
      if os.path.exists(path):
        return path
    return os.path.join(data_dir, *candidates[0])

  def get_train_examples(self, data_dir):
    name = f"multinli.train.{self.language}.tsv"
    path = self._find(data_dir, [("multinli", name), ("XNLI-MT-1.0", "multinli", name)])
    rows = read_delimited(path)[1:]
    examples = []
    for i, (number, fields) in enumerate(rows, start=1):
      text_a = _field(path, number, fields, 0, "premise")
      text_b = _field(path, number, fields, 1, "hypothesis")
      label = _field(path, number, fields, 2, "label")
      if label == "contradictory":
        label = "contradiction"
      self._check(path, number, label)
      examples.append(InputExample(f"train-{i}", text_a, text_b, label))
    return self._nonempty(examples, path, "train")

  def _read_xnli(self, data_dir, split):
    name = f"xnli.{split}.tsv"
    path = self._find(data_dir, [(name,), ("XNLI-1.0", name)])
    rows = read_delimited(path)[1:]
    examples = []
    for i, (number, fields) in enumerate(rows, start=1):
      if _field(path, number, fields, 0, "language") != self.language:
        continue
      label = _field(path, number, fields, 1, "label")
      self._check(path, number, label)
      examples.append(InputExample(f"{split}-{i}", _field(path, number, fields, 6, "sentence1"),
                                   _field(path, number, fields, 7, "sentence2"), label))
    return self._nonempty(examples, path, f"{split} ({self.language})")

  def get_dev_examples(self, data_dir):
    return self._read_xnli(data_dir, "dev")

  def get_test_examples(self, data_dir):
    return self._read_xnli(data_dir, "test")

  def _check(self, path, number, label):
    if label not in self.labels:
      raise UserError(f"{path}:{number}: unknown label {label!r}; this task's labels are "
                      f"{', '.join(self.labels)}")

  @staticmethod
  def _nonempty(examples, path, what):
    if not examples:
      raise UserError(f"{path}: no examples in the {what} split")
    return examples


class DelimitedFileProcessor(GlueTsvProcessor):
  """Users' own data (--task_name=tsv or csv): <data_dir>/{train,dev,test}.<ext>.

  Columns are 0-based numbers, or header names when the file has a header. The label
  list defaults to the sorted distinct labels of the train file (or dev file), so a
  model trained and evaluated on the same files needs no --label_list; give it
  explicitly to fix the order (label ids) for prediction-only runs.
  """

  def __init__(self, delimiter="\t", text_a_column="0", text_b_column=None,
               label_column="1", test_text_a_column=None, test_text_b_column=None,
               labels=None, has_header=False, is_regression=False, extension="tsv"):
    self.delimiter = delimiter
    self.quoting = csv.QUOTE_NONE if delimiter == "\t" else csv.QUOTE_MINIMAL
    self.spec = dict(text_a=text_a_column, text_b=text_b_column, label=label_column)
    self.test_spec = dict(text_a=test_text_a_column or text_a_column,
                          text_b=test_text_b_column if test_text_b_column is not None
                          else text_b_column, label=None)
    self.labels = tuple(labels) if labels else None
    self.has_header = has_header
    self.is_regression = is_regression
    self.metric = "pearson_spearman" if is_regression else "accuracy"
    self.train_file = f"train.{extension}"
    self.dev_file = f"dev.{extension}"
    self.test_file = f"test.{extension}"
    self._data_dir = None

  def _columns(self, path, spec):
    header = None
    if self.has_header:
      rows = read_delimited(path, self.delimiter, self.quoting)
      header = rows[0][1] if rows else []

    def resolve(value, role):
      if value is None or value == "":
        return None
      value = str(value).strip()
      if value.lstrip("-").isdigit():
        return int(value)
      if header is None:
        raise UserError(f"{path}: the {role} column {value!r} is a name, but the file "
                        "has no header (pass --has_header, or use a 0-based column number)")
      if value not in header:
        raise UserError(f"{path}:1: no column named {value!r} in the header "
                        f"({', '.join(header)})")
      return header.index(value)

    return Columns(text_a=resolve(spec["text_a"], "text_a"),
                   text_b=resolve(spec["text_b"], "text_b"),
                   label=resolve(spec["label"], "label"), header=self.has_header)

  def _read(self, path, set_type, labelled):
    spec = self.spec if labelled else self.test_spec
    return self.read_split(path, set_type, self._columns(path, spec), labelled=labelled,
                           delimiter=self.delimiter, quoting=self.quoting)

  @property
  def num_texts(self):
    return 1 if self.spec["text_b"] in (None, "") else 2

  def set_data_dir(self, data_dir):
    """Lets get_labels infer the label list from the train (else dev) file."""
    self._data_dir = data_dir

  def get_labels(self):
    if self.is_regression:
      return None
    if self.labels:
      return list(self.labels)
    if self._data_dir is None:
      raise UserError("--label_list is required for this run (no train or dev file to "
                      "read the labels from)")
    for name in (self.train_file, self.dev_file):
      path = os.path.join(self._data_dir, name)
      if os.path.exists(path):
        columns = self._columns(path, self.spec)
        rows = read_delimited(path, self.delimiter, self.quoting)[1 if columns.header else 0:]
        found = sorted({_field(path, n, f, columns.label, "label") for n, f in rows})
        if found:
          self.labels = tuple(found)
          return list(self.labels)
    raise UserError(f"--label_list is required: neither {self.train_file} nor "
                    f"{self.dev_file} in {self._data_dir} gives the labels")

  def get_train_examples(self, data_dir):
    return self._read(os.path.join(data_dir, self.train_file), "train", True)

  def get_dev_examples(self, data_dir):
    return self._read(os.path.join(data_dir, self.dev_file), "dev", True)

  def get_test_examples(self, data_dir):
    return self._read(os.path.join(data_dir, self.test_file), "test", False)

  def format_prediction(self, value):
    return super().format_prediction(value)


# --task_name (lower-cased, as the original) -> processor class.
PROCESSORS = {
    "cola": ColaProcessor,
    "sst2": Sst2Processor,
    "sst-2": Sst2Processor,
    "mrpc": MrpcProcessor,
    "stsb": StsbProcessor,
    "sts-b": StsbProcessor,
    "qqp": QqpProcessor,
    "mnli": MnliProcessor,
    "qnli": QnliProcessor,
    "rte": RteProcessor,
    "wnli": WnliProcessor,
    "xnli": XnliProcessor,
}
GENERIC_TASKS = ("tsv", "csv")


def get_processor(task_name, xnli_language="zh", **generic_options):
  """The processor for --task_name; `generic_options` configure the tsv/csv task."""
  name = (task_name or "").lower()
  if name in GENERIC_TASKS:
    delimiter = generic_options.pop("delimiter", None) or ("\t" if name == "tsv" else ",")
    return DelimitedFileProcessor(delimiter=delimiter, extension=name, **generic_options)
  if name not in PROCESSORS:
    raise UserError(f"--task_name={task_name}: unknown task; choose one of "
                    f"{', '.join(sorted(PROCESSORS) + list(GENERIC_TASKS))}")
  if name == "xnli":
    return XnliProcessor(language=xnli_language)
  return PROCESSORS[name]()


# --------------------------------------------------------------------------- features


def label_to_id(label, label_list):
  """The label id (float for regression: label_list is None)."""
  if label_list is None:
    return 0.0 if label is None else float(label)
  if label is None:
    return 0
  return label_list.index(label)


def convert_single_example(example, label_list, max_seq_length, tokenizer):
  """The original's conversion of one `InputExample` into `InputFeatures` (FullTokenizer).

  [CLS] a [SEP] (b [SEP]); segment 0 for [CLS], a and the first [SEP], 1 for b and
  its [SEP]; zero padding to max_seq_length. A pair loses tokens from the end of its
  longer text first (tokenization.truncate_seq_pair), a single text its tail. As in the
  original, an empty text_b counts as no text_b.
  """
  tokens_a = tokenizer.tokenize(example.text_a)
  tokens_b = tokenizer.tokenize(example.text_b) if example.text_b else None
  if tokens_b is not None:
    tokenization.truncate_seq_pair(tokens_a, tokens_b, max_seq_length - 3)
  elif len(tokens_a) > max_seq_length - 2:
    tokens_a = tokens_a[0:(max_seq_length - 2)]
  tokens = ["[CLS]"] + tokens_a + ["[SEP]"]
  segment_ids = [0] * len(tokens)
  if tokens_b:
    tokens += tokens_b + ["[SEP]"]
    segment_ids += [1] * (len(tokens_b) + 1)
  input_ids = tokenizer.convert_tokens_to_ids(tokens)
  input_mask = [1] * len(input_ids)
  padding = max_seq_length - len(input_ids)
  input_ids += [0] * padding
  input_mask += [0] * padding
  segment_ids += [0] * padding
  return InputFeatures(input_ids=input_ids, input_mask=input_mask, segment_ids=segment_ids,
                       label_id=label_to_id(example.label, label_list))


# --------------------------------------------------------------------------- tf.data

FEATURE_NAMES = ("input_ids", "input_mask", "segment_ids")


def pack_texts(tokenizer, text_a, text_b, seq_length, empty_b_is_single=True):
  """In-graph conversion of a batch of texts, the original's rules.

  tokenizer: tokenization.FastTokenizer. text_a: tf.string [batch]; text_b: tf.string
  [batch] or None. With empty_b_is_single, rows whose text_b is "" are packed as single
  texts, as the original treats an empty text_b (pass False when no row has one: it
  saves a second packing). Returns int32 [batch, seq_length] input_ids, input_mask,
  segment_ids, plus "length" int32 [batch] (real tokens per row).
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  ids_a = tokenizer.tokenize(text_a)
  if text_b is None:
    packed = tokenization.pack_inputs([ids_a], seq_length, tokenizer.cls_id,
                                      tokenizer.sep_id)
  else:
    packed = tokenization.pack_inputs([ids_a, tokenizer.tokenize(text_b)], seq_length,
                                      tokenizer.cls_id, tokenizer.sep_id)
    if empty_b_is_single:
      single = tokenization.pack_inputs([ids_a], seq_length, tokenizer.cls_id,
                                        tokenizer.sep_id)
      use_pair = tf.expand_dims(tf.strings.length(text_b) > 0, 1)
      packed = {k: tf.where(use_pair, packed[k], single[k]) for k in FEATURE_NAMES}
  packed = {k: tf.cast(packed[k], tf.int32) for k in FEATURE_NAMES}
  packed["length"] = tf.reduce_sum(packed["input_mask"], axis=1)
  return packed


# (id(tokenizer), seq_length, pair, empty_b_is_single) -> (tokenizer, tf.function). Tracing
# the tokenizer and packing takes seconds; every dataset of a run (train, eval, predict)
# calls the same traced function instead of tracing its own copy.
_PACKERS = {}


def _packer(tokenizer, seq_length, pair, empty_b_is_single):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  key = (id(tokenizer), int(seq_length), bool(pair), bool(empty_b_is_single))
  if key not in _PACKERS or _PACKERS[key][0] is not tokenizer:
    spec = tf.TensorSpec([None], tf.string)
    if pair:
      fn = tf.function(lambda a, b: pack_texts(tokenizer, a, b, seq_length,
                                               empty_b_is_single),
                       input_signature=[spec, spec], autograph=False)
    else:
      fn = tf.function(lambda a: pack_texts(tokenizer, a, None, seq_length),
                       input_signature=[spec], autograph=False)
    _PACKERS[key] = (tokenizer, fn)
  return _PACKERS[key][1]


def _round_up(length, multiple):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  return (length + multiple - 1) // multiple * multiple if multiple > 1 else tf.identity(length)


def make_dataset(examples, label_list, tokenizer, max_seq_length, batch_size, *,
                 is_training, fixed_padding=False, seed=12345, window_batches=32,
                 pad_to_multiple_of=8, input_context=None):
  """A tf.data pipeline of batches for training, eval or prediction.

  examples: list of InputExample. label_list: label strings, or None for regression.
  tokenizer: tokenization.FastTokenizer (runs in the graph; ids equal FullTokenizer's).

  Each element is a dict: input_ids, input_mask, segment_ids int32 [batch, seq];
  label_ids int32 [batch] (float32 for regression); example_index int32 [batch], the
  position in `examples` (eval/predict batches are reordered by length, this puts the
  results back in order).

  Padding: with fixed_padding every batch is max_seq_length long (static shapes, for
  TPUs). Otherwise a batch is only as long as its longest row, rounded up to a multiple
  of `pad_to_multiple_of` (which bounds the number of distinct shapes each tf.function
  traces): training buckets rows of similar length (tf.data bucket_by_sequence_length),
  eval/predict sort each window of `window_batches` batches by length.

  Training repeats forever, reshuffles each epoch (seeded) and drops the remainder.
  """
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if not examples:
    raise UserError("no examples to feed")
  regression = label_list is None
  has_b = any(e.text_b is not None for e in examples)
  columns = {
      "text_a": [e.text_a for e in examples],
      "label_ids": np.array([label_to_id(e.label, label_list) for e in examples],
                            np.float32 if regression else np.int32),
      "example_index": np.arange(len(examples), dtype=np.int32),
  }
  if has_b:
    columns["text_b"] = [e.text_b or "" for e in examples]
  dataset = tf.data.Dataset.from_tensor_slices(columns)
  if input_context is not None and input_context.num_input_pipelines > 1:
    dataset = dataset.shard(input_context.num_input_pipelines,
                            input_context.input_pipeline_id)
  if is_training:
    dataset = dataset.shuffle(len(examples), seed=seed, reshuffle_each_iteration=True)
    dataset = dataset.repeat()
  window = batch_size * max(int(window_batches), 1)
  sort_windows = not is_training and not fixed_padding

  if has_b:
    packer = _packer(tokenizer, max_seq_length, True,
                     any(not e.text_b for e in examples))
  else:
    packer = _packer(tokenizer, max_seq_length, False, False)

  def convert(batch):
    packed = (packer(batch["text_a"], batch["text_b"]) if has_b else
              packer(batch["text_a"]))
    features = {k: packed[k] for k in FEATURE_NAMES}
    features["length"] = packed["length"]
    features["label_ids"] = batch["label_ids"]
    features["example_index"] = batch["example_index"]
    if sort_windows:
      order = tf.argsort(packed["length"], stable=True)
      features = {k: tf.gather(v, order) for k, v in features.items()}
    return features

  dataset = dataset.batch(window).map(convert, num_parallel_calls=tf.data.AUTOTUNE,
                                      deterministic=True).unbatch()
  if fixed_padding:
    dataset = dataset.batch(batch_size, drop_remainder=is_training)
  elif is_training:
    step = max(int(pad_to_multiple_of), 1)
    boundaries = list(range(step + 1, max_seq_length + 1, step))
    dataset = dataset.bucket_by_sequence_length(
        lambda features: features["length"], bucket_boundaries=boundaries,
        bucket_batch_sizes=[batch_size] * (len(boundaries) + 1), drop_remainder=True)
  else:
    dataset = dataset.batch(batch_size)

  def finish(features):
    features = dict(features)
    length = features.pop("length")
    if not fixed_padding:
      longest = _round_up(tf.maximum(tf.reduce_max(length), 1), pad_to_multiple_of)
      longest = tf.minimum(longest, max_seq_length)
      for name in FEATURE_NAMES:
        features[name] = features[name][:, :longest]
    return features

  return dataset.map(finish, num_parallel_calls=tf.data.AUTOTUNE,
                     deterministic=True).prefetch(tf.data.AUTOTUNE)


# --------------------------------------------------------------------------- metrics


def accuracy(predictions, labels):
  predictions, labels = np.asarray(predictions), np.asarray(labels)
  return float(np.mean(predictions == labels)) if labels.size else 0.0


def f1_score(predictions, labels, positive=1):
  """Binary F1 of the positive class (GLUE's F1 for MRPC and QQP: class 1)."""
  predictions, labels = np.asarray(predictions), np.asarray(labels)
  tp = float(np.sum((predictions == positive) & (labels == positive)))
  fp = float(np.sum((predictions == positive) & (labels != positive)))
  fn = float(np.sum((predictions != positive) & (labels == positive)))
  return 0.0 if tp == 0 else 2 * tp / (2 * tp + fp + fn)


def matthews_corrcoef(predictions, labels):
  """Matthews correlation (multi-class form, equal to the binary one for 2 classes).

  0.0 when a marginal is constant (the undefined case, as scikit-learn reports it).
  """
  predictions, labels = np.asarray(predictions), np.asarray(labels)
  classes = np.union1d(predictions, labels)
  index = {c: i for i, c in enumerate(classes)}
  confusion = np.zeros((len(classes), len(classes)), dtype=np.float64)
  for t, p in zip(labels, predictions):
    confusion[index[t], index[p]] += 1
  t_sum, p_sum = confusion.sum(axis=1), confusion.sum(axis=0)
  correct, total = np.trace(confusion), confusion.sum()
  cov_ytyp = correct * total - np.dot(t_sum, p_sum)
  cov_ypyp = total ** 2 - np.dot(p_sum, p_sum)
  cov_ytyt = total ** 2 - np.dot(t_sum, t_sum)
  if cov_ypyp * cov_ytyt == 0:
    return 0.0
  return float(cov_ytyp / np.sqrt(cov_ytyt * cov_ypyp))


def pearson_corrcoef(x, y):
  x, y = np.asarray(x, np.float64), np.asarray(y, np.float64)
  xm, ym = x - x.mean(), y - y.mean()
  denominator = np.sqrt(np.sum(xm * xm) * np.sum(ym * ym))
  return 0.0 if denominator == 0 else float(np.sum(xm * ym) / denominator)


def rankdata_average(values):
  """1-based ranks; tied values share the average of their ranks."""
  values = np.asarray(values, np.float64)
  order = np.argsort(values, kind="mergesort")
  ranks = np.empty(len(values), np.float64)
  sorted_values = values[order]
  start = 0
  while start < len(values):
    end = start
    while end + 1 < len(values) and sorted_values[end + 1] == sorted_values[start]:
      end += 1
    ranks[order[start:end + 1]] = (start + end) / 2.0 + 1.0
    start = end + 1
  return ranks


def spearman_corrcoef(x, y):
  return pearson_corrcoef(rankdata_average(x), rankdata_average(y))


def compute_metrics(metric, predictions, labels):
  """GLUE's metrics for one eval set, as a dict of names to floats.

  predictions, labels: label ids (int) or, for "pearson_spearman", float scores.
  Classification tasks always include "accuracy" (the original's eval_accuracy).
  """
  if metric == "pearson_spearman":
    pearson = pearson_corrcoef(predictions, labels)
    spearman = spearman_corrcoef(predictions, labels)
    return {"pearson": pearson, "spearman": spearman, "corr": (pearson + spearman) / 2}
  result = {"accuracy": accuracy(predictions, labels)}
  if metric == "accuracy_f1":
    result["f1"] = f1_score(predictions, labels)
    result["acc_and_f1"] = (result["accuracy"] + result["f1"]) / 2
  elif metric == "matthews":
    result["matthews_corrcoef"] = matthews_corrcoef(predictions, labels)
  elif metric != "accuracy":
    raise ValueError(f"unknown metric {metric!r}")
  return result


# --------------------------------------------------------------------------- outputs


def submission_index(example, position):
  """The test row's index for a GLUE submission: the file's own index column (kept in the
  guid "<split>-<index>") or, without one, the row's position."""
  tail = example.guid.rsplit("-", 1)[-1]
  return tail if tail.isdigit() else str(position)


def write_submission(path, processor, examples, predictions):
  """GLUE server format: header "index\\tprediction", one line per test row, in order."""
  with script_utils.atomic_open(path) as handle:
    handle.write("index\tprediction\n")
    for position, (example, value) in enumerate(zip(examples, predictions)):
      handle.write(f"{submission_index(example, position)}\t"
                   f"{processor.format_prediction(value)}\n")


def write_probabilities(path, probabilities):
  """The original's test_results.tsv: one line per example, the class probabilities
  (or the regression score) tab-separated."""
  probabilities = np.asarray(probabilities)
  if probabilities.ndim == 1:
    probabilities = probabilities[:, None]
  with script_utils.atomic_open(path) as handle:
    for row in probabilities:
      handle.write("\t".join(str(float(v)) for v in row) + "\n")
