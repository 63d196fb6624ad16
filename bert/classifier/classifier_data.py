"""Every classification task's reader: the `DataProcessor` base class, one small subclass
per task, and the one chosen by --task_name (`get_processor`).

The original's pattern is kept (`get_train_examples`, `get_dev_examples`,
`get_test_examples`, `get_labels`; `PROCESSORS` maps --task_name to a class), so a GLUE
task is a few lines of column numbers (`GlueTsvProcessor`; see `RteProcessor`). Users'
TSV/CSV files are `DelimitedFileProcessor`'s. Examples, the reading of delimited files
and the output files are classifier_examples.py's."""

import csv
import dataclasses
import math
import os
import re

from bert.classifier import classifier_examples
from bert.utils import file_io
from bert.utils import paths
from bert.utils import settings
from bert.utils import errors

UserError = errors.UserError


# --------------------------------------------------------------------------- the base class


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
    """Gets a collection of `classifier_examples.InputExample`s for the train set."""
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
    return [classifier_examples.EvalSet("dev", self.get_dev_examples(data_dir))]

  def get_predict_sets(self, data_dir):
    return [classifier_examples.PredictSet("test", self.get_test_examples(data_dir),
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


# --------------------------------------------------------------------------- GLUE and XNLI


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
    return self.read_split(paths.join(data_dir, self.train_file), "train",
                           self.train_columns)

  def get_dev_examples(self, data_dir):
    return self.read_split(paths.join(data_dir, self.dev_file), "dev",
                           self.dev_columns or self.train_columns)

  def get_test_examples(self, data_dir):
    return self.read_split(paths.join(data_dir, self.test_file), "test",
                           self.test_columns, labelled=False)

  def read_split(self, path, set_type, columns, labelled=True, delimiter="\t",
                 quoting=csv.QUOTE_NONE):
    """Reads one split; fails on a row of the wrong width, an unknown label or an empty
    file."""
    rows = classifier_examples.data_rows(
        path, classifier_examples.read_delimited(path, delimiter=delimiter, quoting=quoting),
        columns.header, columns.width, delimiter)
    label_set = None if self.is_regression else set(self.get_labels())
    examples = []
    for i, (number, fields) in enumerate(rows, start=1 if columns.header else 0):
      text_a = classifier_examples.field(path, number, fields, columns.text_a, "first text")
      text_b = (None if columns.text_b is None else
                classifier_examples.field(path, number, fields, columns.text_b, "second text"))
      label = None
      if labelled:
        label = classifier_examples.field(path, number, fields, columns.label, "label")
        label = self._check_label(path, number, label, label_set)
      if columns.index is not None:
        guid = f"{set_type}-{classifier_examples.field(path, number, fields, columns.index, 'index')}"
      else:
        guid = f"{set_type}-{i}"
      examples.append(classifier_examples.InputExample(guid=guid, text_a=text_a, text_b=text_b,
                                                   label=label))
    if not examples:
      raise UserError(f"{path}: no examples in the {set_type} split "
                      "(the file has no data rows)")
    return examples

  def _check_label(self, path, number, label, label_set):
    if self.is_regression:
      try:
        value = float(label)
      except ValueError:
        value = math.nan
      if not math.isfinite(value):
        raise UserError(f"{path}:{number}: label {label!r} is not a finite number "
                        "(this is a regression task)")
      return value
    if label not in label_set:
      raise UserError(f"{path}:{number}: unknown label {label!r}; this task's labels are "
                      f"{', '.join(self.get_labels())}")
    return label


# The layouts several GLUE files share: "index, sentence" (CoLA's and SST-2's test files)
# and "index, sentence1, sentence2[, label]" (QNLI, RTE and WNLI; QQP's and AX's test files).
_INDEX_SENTENCE = classifier_examples.Columns(text_a=1, index=0)
_INDEX_PAIR = classifier_examples.Columns(text_a=1, text_b=2, index=0)
_INDEX_PAIR_LABEL = classifier_examples.Columns(text_a=1, text_b=2, label=3)


class ColaProcessor(GlueTsvProcessor):
  """CoLA: train/dev have no header, label in column 1, sentence in 3; test: index, sentence."""
  metric = "matthews"
  submission_file = "CoLA.tsv"
  train_columns = classifier_examples.Columns(text_a=3, label=1, header=False, width=4)
  test_columns = _INDEX_SENTENCE


class Sst2Processor(GlueTsvProcessor):
  """SST-2: sentence, label (header); test: index, sentence."""
  submission_file = "SST-2.tsv"
  train_columns = classifier_examples.Columns(text_a=0, label=1)
  test_columns = _INDEX_SENTENCE


class MrpcProcessor(GlueTsvProcessor):
  """MRPC: Quality, #1 ID, #2 ID, #1 String, #2 String (BOM on train/dev)."""
  metric = "accuracy_f1"
  submission_file = "MRPC.tsv"
  train_columns = classifier_examples.Columns(text_a=3, text_b=4, label=0)
  test_columns = classifier_examples.Columns(text_a=3, text_b=4, index=0)


class StsbProcessor(GlueTsvProcessor):
  """STS-B: sentences in columns 7 and 8, the 0-5 similarity score in 9 (regression)."""
  metric = "pearson_spearman"
  is_regression = True
  submission_file = "STS-B.tsv"
  train_columns = classifier_examples.Columns(text_a=7, text_b=8, label=9)
  test_columns = classifier_examples.Columns(text_a=7, text_b=8, index=0)


class QqpProcessor(GlueTsvProcessor):
  """QQP: id, qid1, qid2, question1, question2, is_duplicate; test: id, question1, question2."""
  metric = "accuracy_f1"
  submission_file = "QQP.tsv"
  train_columns = classifier_examples.Columns(text_a=3, text_b=4, label=5)
  test_columns = _INDEX_PAIR


class QnliProcessor(GlueTsvProcessor):
  """QNLI: index, question, sentence, label."""
  labels = ("entailment", "not_entailment")
  submission_file = "QNLI.tsv"
  train_columns = _INDEX_PAIR_LABEL
  test_columns = _INDEX_PAIR


class RteProcessor(QnliProcessor):
  """RTE: index, sentence1, sentence2, label (same layout and labels as QNLI)."""
  submission_file = "RTE.tsv"


class WnliProcessor(QnliProcessor):
  """WNLI: index, sentence1, sentence2, label (QNLI's layout; the labels 0/1)."""
  labels = ("0", "1")
  submission_file = "WNLI.tsv"


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
  train_columns = classifier_examples.Columns(text_a=8, text_b=9, label=-1, index=0)
  test_columns = classifier_examples.Columns(text_a=8, text_b=9, index=0)
  ax_columns = _INDEX_PAIR

  def get_dev_examples(self, data_dir):
    return self.read_split(paths.join(data_dir, "dev_matched.tsv"), "dev_matched",
                           self.train_columns)

  def get_dev_mismatched_examples(self, data_dir):
    return self.read_split(paths.join(data_dir, "dev_mismatched.tsv"),
                           "dev_mismatched", self.train_columns)

  def get_test_examples(self, data_dir):
    return self.read_split(paths.join(data_dir, "test_matched.tsv"), "test_matched",
                           self.test_columns, labelled=False)

  def get_test_mismatched_examples(self, data_dir):
    return self.read_split(paths.join(data_dir, "test_mismatched.tsv"),
                           "test_mismatched", self.test_columns, labelled=False)

  @staticmethod
  def find_ax_file(data_dir):
    for candidate in (paths.join(data_dir, "ax.tsv"), paths.join(data_dir, "AX.tsv"),
                      paths.join(data_dir, "diagnostic.tsv"),
                      paths.join(data_dir, os.pardir, "ax.tsv"),
                      paths.join(data_dir, os.pardir, "AX.tsv"),
                      paths.join(data_dir, os.pardir, "diagnostic", "diagnostic.tsv"),
                      paths.join(data_dir, os.pardir, "AX", "test.tsv")):
      if file_io.exists(candidate):
        return paths.normpath(candidate)
    return None

  def get_ax_examples(self, data_dir):
    path = self.find_ax_file(data_dir)
    if path is None:
      return None
    return self.read_split(path, "ax", self.ax_columns, labelled=False)

  def get_eval_sets(self, data_dir):
    return [classifier_examples.EvalSet("dev_matched", self.get_dev_examples(data_dir), "eval_"),
            classifier_examples.EvalSet("dev_mismatched",
                                    self.get_dev_mismatched_examples(data_dir),
                                    "eval_mismatched_")]

  def get_predict_sets(self, data_dir):
    sets = [classifier_examples.PredictSet("test_matched", self.get_test_examples(data_dir),
                                       "test_results.tsv", "MNLI-m.tsv"),
            classifier_examples.PredictSet("test_mismatched",
                                       self.get_test_mismatched_examples(data_dir),
                                       "test_results_mismatched.tsv", "MNLI-mm.tsv")]
    ax = self.get_ax_examples(data_dir)
    if ax is not None:
      sets.append(classifier_examples.PredictSet("ax", ax, "test_results_ax.tsv", "AX.tsv"))
    return sets


# The language the original's XNLI processor reads (--xnli_language's default).
XNLI_LANGUAGE = "zh"


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

  def __init__(self, language=XNLI_LANGUAGE):
    self.language = language

  def get_labels(self):
    return list(self.labels)

  @staticmethod
  def _find(data_dir, candidates):
    for candidate in candidates:
      path = paths.join(data_dir, *candidate)
      if file_io.exists(path):
        return path
    return paths.join(data_dir, *candidates[0])

  def get_train_examples(self, data_dir):
    name = f"multinli.train.{self.language}.tsv"
    path = self._find(data_dir, [("multinli", name), ("XNLI-MT-1.0", "multinli", name)])
    rows = classifier_examples.data_rows(path, classifier_examples.read_delimited(path), header=True)
    examples = []
    for i, (number, fields) in enumerate(rows, start=1):
      text_a = classifier_examples.field(path, number, fields, 0, "premise")
      text_b = classifier_examples.field(path, number, fields, 1, "hypothesis")
      label = classifier_examples.field(path, number, fields, 2, "label")
      if label == "contradictory":
        label = "contradiction"
      self._check(path, number, label)
      examples.append(classifier_examples.InputExample(f"train-{i}", text_a, text_b, label))
    return self._nonempty(examples, path, "train")

  def _read_xnli(self, data_dir, split):
    name = f"xnli.{split}.tsv"
    path = self._find(data_dir, [(name,), ("XNLI-1.0", name)])
    rows = classifier_examples.data_rows(path, classifier_examples.read_delimited(path), header=True)
    examples = []
    for i, (number, fields) in enumerate(rows, start=1):
      if classifier_examples.field(path, number, fields, 0, "language") != self.language:
        continue
      label = classifier_examples.field(path, number, fields, 1, "label")
      self._check(path, number, label)
      examples.append(classifier_examples.InputExample(
          f"{split}-{i}", classifier_examples.field(path, number, fields, 6, "sentence1"),
          classifier_examples.field(path, number, fields, 7, "sentence2"), label))
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


# --------------------------------------------------------------------------- users' own files


# Label-column names seen in public data sets' headers (lower-cased).
_HEADER_WORDS = frozenset((
    "label", "labels", "gold_label", "class", "classes", "category", "target", "y",
    "sentiment", "polarity", "score", "rating", "stars", "tag", "output", "answer"))


def _is_number(text):
  try:
    return math.isfinite(float(text))
  except (TypeError, ValueError):
    return False


def _shape(text):
  """A label's shape: its character classes with runs collapsed ("B-PER" -> "A-A")."""
  classes = []
  for char in str(text).strip():
    kind = "9" if char.isdigit() else ("A" if char.isalpha() else char)
    if not classes or classes[-1] != kind:
      classes.append(kind)
  return "".join(classes)


class DelimitedFileProcessor(GlueTsvProcessor):
  """Users' own data (--task_name=tsv or csv): <data_dir>/{train,dev,test}.<ext>.

  classifier_examples.Columns are 0-based numbers, or header names when the file has a header. The label
  list defaults to the sorted distinct labels of the train file (or dev file), so a
  model trained and evaluated on the same files needs no --label_list; give it
  explicitly to fix the order (label ids) for prediction-only runs.
  """

  def __init__(self, columns=None, extension="tsv"):
    """columns: a classifier_examples.DelimitedFileOptions (default: its defaults); extension:
    tsv or csv, the files' names and, without columns.delimiter, their delimiter."""
    columns = columns or classifier_examples.DelimitedFileOptions()
    self.columns = columns
    self.delimiter = columns.delimiter or ("\t" if extension == "tsv" else ",")
    self.quoting = csv.QUOTE_NONE if self.delimiter == "\t" else csv.QUOTE_MINIMAL
    self.spec = dict(text_a=columns.text_a_column, text_b=columns.text_b_column,
                     label=columns.label_column)
    self.test_spec = dict(text_a=columns.test_text_a_column or columns.text_a_column,
                          text_b=columns.test_text_b_column
                          if columns.test_text_b_column is not None
                          else columns.text_b_column, label=None)
    self.labels = columns.label_list or None  # checked by the options themselves
    self.has_header = columns.has_header
    self.is_regression = bool(columns.regression)
    self.metric = "pearson_spearman" if self.is_regression else "accuracy"
    self.train_file = f"train.{extension}"
    self.dev_file = f"dev.{extension}"
    self.test_file = f"test.{extension}"
    self._data_dir = None

  def _columns(self, path, spec):
    """The classifier_examples.Columns of `path` for spec {role: number or header name}; fails
    when a name is missing from the header or appears in it twice, or two roles share a
    column."""
    header, header_line = None, 1
    if self.has_header:
      rows = classifier_examples.read_delimited(path, self.delimiter, self.quoting)
      header_line, header = rows[0] if rows else (1, [])

    def resolve(value, role):
      if value is None or value == "":
        return None
      value = str(value).strip()
      if re.fullmatch(r"-?[0-9]+", value):
        return int(value)
      if header is None:
        raise UserError(f"{path}: the {role} column {value!r} is a name, but the file "
                        "has no header (pass --has_header, or use a 0-based column number)")
      if value not in header:
        raise UserError(f"{path}:{header_line}: no column named {value!r} in the header "
                        f"({', '.join(header)})")
      if header.count(value) > 1:
        raise UserError(f"{path}:{header_line}: the header names {value!r} "
                        f"{header.count(value)} times; use a 0-based column number")
      return header.index(value)

    resolved = {role: resolve(value, role) for role, value in spec.items()}
    used = {}
    for role, column in resolved.items():
      if column is not None and column in used:
        raise UserError(f"{path}: the {used[column]} and {role} columns are both column "
                        f"{column}; give each its own column")
      used.setdefault(column, role)
    return classifier_examples.Columns(**resolved, header=bool(self.has_header))

  def _refuse_header_read_as_data(self, path, label_column):
    """A header line read as data would make its label ("label") a class of its own,
    silently. When --has_header was not given at all (None) and the first row's label
    looks like a column name, stop and ask; --has_header=false says the row is data."""
    if self.has_header is not None or label_column is None:
      return
    rows = classifier_examples.read_delimited(path, self.delimiter, self.quoting)
    if len(rows) < 3:
      return
    labels = [f[label_column] if -len(f) <= label_column < len(f) else None
              for _, f in rows]
    first, others = labels[0], [l for l in labels[1:] if l is not None]
    if first is None or not others or first in others:
      return
    reason = None
    if self.is_regression or all(_is_number(l) for l in others):
      if not _is_number(first):
        reason = (f"its label {first!r} is not a number, every other row's is")
    elif first.strip().lower() in _HEADER_WORDS:
      reason = f"its label {first!r} is a column name and occurs in no other row"
    elif _shape(first) not in {_shape(l) for l in others}:
      reason = f"its label {first!r} occurs in no other row and looks like none of them"
    if reason:
      raise UserError(
          f"{path}:{rows[0][0]}: the first row looks like a header ({reason}); pass "
          "--has_header if it is one, or --has_header=false if the first row really is data")

  def _refuse_header_in_unlabelled_file(self, path):
    """A test file has no label to judge its first row by: the task's train (else dev)
    file beside it is judged instead, by the same rule (run_classifier.py --do_predict
    and predict_litert.py alike), since the three files come from one source."""
    if self.has_header is not None:
      return
    for name in (self.train_file, self.dev_file):
      sibling = os.path.join(os.path.dirname(path), name)
      if os.path.isfile(sibling):
        self._refuse_header_read_as_data(sibling, self._columns(sibling, self.spec).label)
        return

  def _read(self, path, set_type, labelled):
    spec = self.spec if labelled else self.test_spec
    if labelled:
      self._refuse_header_read_as_data(path, self._columns(path, spec).label)
    else:
      self._refuse_header_in_unlabelled_file(path)
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
      path = paths.join(self._data_dir, name)
      if file_io.exists(path):
        columns = self._columns(path, self.spec)
        self._refuse_header_read_as_data(path, columns.label)
        rows = classifier_examples.data_rows(
            path, classifier_examples.read_delimited(path, self.delimiter, self.quoting),
            columns.header, delimiter=self.delimiter)
        found = set()
        for number, fields in rows:
          label = classifier_examples.field(path, number, fields, columns.label, "label")
          if not label.strip():
            raise UserError(f"{path}:{number}: the label is empty; every labelled row "
                            "needs one (or pass --label_list)")
          found.add(label)
        if found:
          found = sorted(found)
          self.labels = tuple(found)
          return list(self.labels)
    raise UserError(f"--label_list is required: neither {self.train_file} nor "
                    f"{self.dev_file} in {self._data_dir} gives the labels")

  def get_train_examples(self, data_dir):
    return self._read(paths.join(data_dir, self.train_file), "train", True)

  def get_dev_examples(self, data_dir):
    return self._read(paths.join(data_dir, self.dev_file), "dev", True)

  def get_test_examples(self, data_dir):
    return self._read(paths.join(data_dir, self.test_file), "test", False)


# --------------------------------------------------------------------------- by --task_name

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


def task_key(task_name):
  """--task_name as PROCESSORS and GENERIC_TASKS name it (lower-cased, as the original); an
  unknown task is a UserError listing them."""
  name = (task_name or "").lower()
  if name not in GENERIC_TASKS and name not in PROCESSORS:
    raise UserError(f"--task_name={task_name}: unknown task; choose one of "
                    f"{', '.join(sorted(PROCESSORS) + list(GENERIC_TASKS))}")
  return name


def get_processor(task_name, xnli_language=XNLI_LANGUAGE, columns=None):
  """The processor for --task_name; `columns` (a classifier_examples.DelimitedFileOptions)
  configure the tsv/csv task."""
  name = task_key(task_name)
  if name in GENERIC_TASKS:
    return DelimitedFileProcessor(columns, extension=name)
  if name == "xnli":
    return XnliProcessor(language=xnli_language)
  return PROCESSORS[name]()


@dataclasses.dataclass(frozen=True)
class ClassifierOptions:
  """run_classifier.py's task settings, each its flag of the same name (made from these
  fields), checked when made; the tsv/csv task's columns are DelimitedFileOptions'."""
  task_name: str = settings.setting(
      help="The name of the task to train: cola, sst2, mrpc, stsb, qqp, mnli, qnli, rte, "
      "wnli, xnli, or tsv/csv for your own files.")
  xnli_language: str = settings.setting(
      XNLI_LANGUAGE, "XNLI: the language to train and evaluate on.")
  fixed_padding: bool = settings.setting(
      classifier_examples.FIXED_PADDING, "Pad every batch to max_seq_length (static "
      "shapes, for TPUs). Default: pad each batch only to its longest row (training "
      "batches rounded up to a multiple of 8 with --enable_xla, which compiles every "
      "shape).")

  def __post_init__(self):
    task_key(self.task_name)
