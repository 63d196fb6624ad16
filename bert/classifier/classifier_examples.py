"""Classification data: examples, reading delimited files, the tsv/csv task's columns, and
the output files (class probabilities, GLUE submissions); each task's reader is in
classifier_data.py.

Files are read as GLUE distributes them: tab-separated with csv quoting off (MRPC's
sentences hold unbalanced double quotes that a quoting reader would swallow across
lines). So every row must have the header's number of columns: a tab inside a sentence
would otherwise shift the text and label columns silently."""

import csv
import dataclasses
import io
import sys
from typing import Optional, Sequence

import numpy as np

from bert.utils import atomic_output
from bert.utils import file_io
from bert.utils import errors
from bert.utils import input_checks
from bert.utils import settings

UserError = errors.UserError

# Batches are padded to their longest row, not to max_seq_length (--fixed_padding's
# default; fixed shapes are for TPUs).
FIXED_PADDING = False


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


def read_delimited(path, delimiter="\t", quoting=csv.QUOTE_NONE):
  """Returns [(line_number, fields)] of a delimited UTF-8 file; line numbers start at 1.

  Quoting is off by default (GLUE's files need it off); `quoting=csv.QUOTE_MINIMAL`
  reads ordinary CSV with "..." fields, strictly: a quote that is never closed (it would
  swallow every later row into one field) or text after a closing quote is an error
  naming the line where the row starts. A leading UTF-8 byte-order mark is dropped.
  Blank lines are skipped (they carry no row). The line number of a row is the line
  where it ends (a quoted CSV field may span lines).
  """
  data = file_io.read_bytes(path, missing_hint="; check --data_dir")
  try:
    text = file_io.decode_text(data)
  except UnicodeDecodeError as exc:
    raise UserError(errors.not_utf8_message(path, exc, data)) from None
  kwargs = {"delimiter": delimiter, "quoting": quoting}
  if quoting == csv.QUOTE_NONE:
    kwargs["quotechar"] = None
  else:
    kwargs["strict"] = True
  csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
  # Rows end at \n, \r\n or \r only, as when the original iterated over the file;
  # str.splitlines() would also end a row inside a sentence at \x0b, \x0c, \x1c-\x1e,
  # \x85, U+2028 or U+2029 (tests/reliability/test_fuzz_readers.py).
  reader = csv.reader(io.StringIO(text, newline=""), **kwargs)
  rows = []
  start = 1
  try:
    for fields in reader:
      if fields:
        rows.append((reader.line_num, fields))
      start = reader.line_num + 1
  except csv.Error as exc:
    raise UserError(f"{path}:{start}: cannot parse the row ({exc}); a field that starts "
                    "with a quote must end with one (write a quote inside a quoted field "
                    'as "")') from None
  return rows


def field(path, number, fields, column, what):
  if column >= len(fields) or column < -len(fields):
    raise UserError(
        f"{path}:{number}: too few columns: the {what} is column "
        f"{column if column >= 0 else len(fields) + column} (0-based) but the row has "
        f"{len(fields)}; check the delimiter and that each row is on one line")
  return fields[column]


def data_rows(path, rows, header, width=None, delimiter="\t"):
  """Yields the data rows of `rows` (read_delimited's), each checked to have the file's
  width as it is reached (so the first bad row of the file is the one reported).

  header: whether rows[0] is a header line (skipped). The width every row must have is
  the header's number of fields, else `width`, else the first row's. A row with more
  columns than that is how a tab inside a sentence shows up (GLUE files are read
  without quoting, so it would shift text_b and the label); a row with fewer is cut
  short. Either is a UserError naming the file, line and both counts.
  """
  if not rows:
    return
  if header:
    (header_line, header_fields), rows = rows[0], rows[1:]
    width, source = len(header_fields), f"the header (line {header_line}) has"
  elif width is not None:
    source = "this task's rows have"
  else:
    width, source = len(rows[0][1]), f"the first row (line {rows[0][0]}) has"
  for number, fields in rows:
    if len(fields) != width:
      more = len(fields) > width
      name = "tab" if delimiter == "\t" else repr(delimiter)
      hint = (f"a {name} inside a text shifts the columns: remove it"
              + ("" if delimiter == "\t" else " or quote the text")) if more else (
                  "check the delimiter and that each row is on one line")
      raise UserError(f"{path}:{number}: too {'many' if more else 'few'} columns: the "
                      f"row has {len(fields)}, {source} {width}; {hint}")
    yield number, fields


# Column layout of one split: texts, label, and the id column that names the guid
# ("<split>-<id>"; without one the guid is "<split>-<row number>"). None: absent.
@dataclasses.dataclass(frozen=True)
class Columns:
  text_a: int
  text_b: Optional[int] = None
  label: Optional[int] = None
  index: Optional[int] = None
  header: bool = True
  # The number of fields of every row of a file without a header (None: the first row's).
  width: Optional[int] = None


# The tsv/csv task (users' own files): one object from the flags (run_classifier.py's,
# predict_litert.py's and the tools' are made from its fields) to the reader
# (classifier_data.DelimitedFileProcessor takes it as it is).
@dataclasses.dataclass(frozen=True)
class DelimitedFileOptions:
  """The columns (0-based numbers or header names), header, delimiter, labels and
  regression of a tsv/csv task.

  has_header None: not given (a first row that looks like a header is refused, rather
  than read as data). label_list and regression None: not given; a trained model's own
  are used where there is one (a different one given is refused: litert/predictor.py);
  for training, regression None is a classifier and label_list None the files' labels.
  """
  text_a_column: str = settings.setting(
      "0", "tsv/csv task: column of the first text (0-based number, or a header name).")
  text_b_column: Optional[str] = settings.setting(
      None, "tsv/csv task: column of the second text, for sentence-pair tasks.")
  label_column: str = settings.setting("1", "tsv/csv task: column of the label.")
  test_text_a_column: Optional[str] = settings.setting(
      None, "tsv/csv task: text_a column in test.* (default: --text_a_column).")
  test_text_b_column: Optional[str] = settings.setting(
      None, "tsv/csv task: text_b column in test.* (default: --text_b_column).")
  label_list: Optional[Sequence[str]] = settings.setting(
      None, "tsv/csv task: the labels, comma-separated, in label-id order (default: the "
      "sorted distinct labels of train.*, else dev.*).")
  has_header: Optional[bool] = settings.setting(
      False, "tsv/csv task: the files start with a header line. Not given: a first row "
      "that looks like a header stops the run; --has_header=false: it is data.")
  delimiter: Optional[str] = settings.setting(
      None, "tsv/csv task: field delimiter (default: tab for tsv, comma for csv).")
  regression: Optional[bool] = settings.setting(
      None, "tsv/csv task: the label is a number; one output trained with mean squared "
      "error, evaluated with Pearson/Spearman.", flag_form=bool)

  def __post_init__(self):
    if self.label_list:
      # A label given twice or an empty one would give two ids to one class or train a
      # class no row has.
      object.__setattr__(self, "label_list", input_checks.check_label_list(
          self.label_list, f"--label_list={','.join(map(str, self.label_list))}"))


# --------------------------------------------------------------------------- labels


def label_to_id(label, label_list):
  """The label id (float for regression: label_list is None)."""
  if label_list is None:
    return 0.0 if label is None else float(label)
  if label is None:
    return 0
  return label_list.index(label)


# --------------------------------------------------------------------------- outputs


def submission_index(example, position):
  """The test row's index for a GLUE submission: the file's own index column (kept in the
  guid "<split>-<index>") or, without one, the row's position."""
  tail = example.guid.rsplit("-", 1)[-1]
  return tail if tail.isdigit() else str(position)


def write_submission(path, processor, examples, predictions):
  """GLUE server format: header "index\\tprediction", one line per test row, in order."""
  with errors.disk_full_names(path), atomic_output.atomic_open(path) as handle:
    handle.write("index\tprediction\n")
    for position, (example, value) in enumerate(zip(examples, predictions, strict=True)):
      handle.write(f"{submission_index(example, position)}\t"
                   f"{processor.format_prediction(value)}\n")


def write_probabilities(path, probabilities):
  """The original's test_results.tsv: one line per example, the class probabilities
  (or the regression score) tab-separated."""
  probabilities = np.asarray(probabilities)
  if probabilities.ndim == 1:
    probabilities = probabilities[:, None]
  with errors.disk_full_names(path), atomic_output.atomic_open(path) as handle:
    for row in probabilities:
      handle.write("\t".join(str(float(v)) for v in row) + "\n")
