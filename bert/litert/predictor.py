"""Prediction files from a LiteRT model of an export, in a process without TensorFlow.

`predict_files` reads what `run_classifier.py --do_predict` / `run_multilabel.py
--do_predict` read, tokenizes with the pure-Python tokenizer (token for token the one of
training) and writes their files with the same writers. What the model is comes from
model.json, checked whole at load (export_check.py): a model of another task, or a head
this predictor does not serve, is refused before any file is read. Paths are local: the
runtime opens local files."""

import dataclasses
import os

import numpy as np

from bert.classifier import classifier_examples
from bert.classifier import classifier_data
from bert.formats import litert_metadata
from bert.litert import export_check
from bert.multilabel import multilabel_data
from bert import tokenization
from bert.utils import atomic_output
from bert.utils import errors
from bert.utils import input_checks
from bert.utils import paths

UserError = errors.UserError

CLASSIFIER_HEADS = ("classifier", "regression")
MULTI_LABEL_HEAD = "multi_label"
MULTI_LABEL_TASK_NAMES = ("multilabel", "multi_label", "multi-label")
INSTALL_HINT = "pip install bert-tensorflow2 (in a clone, make installs it)"
SERVED_HEADS = CLASSIFIER_HEADS + (MULTI_LABEL_HEAD,)
# Where the models this predictor does not serve go instead (docs/serving.md).
NOT_SERVED = {
    "squad": "a SQuAD model's answers need run_squad.py's decoding: run_squad.py "
             "--do_predict (or its SavedModel in export_dir/ids)",
    "encoder": "an encoder's outputs are features for a head of your own: run the .tflite "
               "with ai_edge_litert's Interpreter yourself (docs/serving.md)"}


def default_threads():
  """The CPUs this process may run on (its affinity), else the machine's count."""
  if hasattr(os, "sched_getaffinity"):
    return len(os.sched_getaffinity(0))
  return os.cpu_count() or 1


class LiteRTModel:
  """One .tflite model of an export with its model.json and tokenizer.

  `run(rows)`: rows [(ids, segment_ids)] of one batch -> the model's outputs for them
  (numpy arrays by output name), the batch padded to its longest row.

  flag: the command-line flag that named model_file ("--model"), for messages; None: a
  tool whose flags name the model otherwise (the messages name the file alone).
  """

  def __init__(self, model_file, num_threads=None, flag="--model"):
    self.model_file = model_file
    self.named = f"{flag}={model_file}" if flag else model_file
    if not os.path.isfile(model_file):
      raise UserError(f"{self.named}: no such file"
                      + (" (a folder: name the .tflite file in it, e.g. "
                         f"{litert_metadata.MODEL_FILES['int8']})"
                         if os.path.isdir(model_file) else ""))
    self.metadata = litert_metadata.read_metadata(model_file)
    self.precision = litert_metadata.precision_of_file(model_file, self.metadata)
    if self.precision is None:
      raise UserError(f"{self.named}: model.json beside it lists "
                      f"{', '.join(sorted(e['file'] for e in self.metadata['models'].values()))}"
                      ", not this file")
    export_check.check_metadata(self.metadata, self.metadata_file())
    self.head = self.metadata["head"]
    self.labels = self.metadata.get("labels")
    self.max_seq_length = int(self.metadata["max_seq_length"])
    self.num_threads = int(num_threads or default_threads())
    if self.num_threads < 1:
      raise ValueError(f"num_threads={num_threads}: must be at least 1")
    vocab_file = export_check.vocab_path(model_file, self.metadata)
    self.vocab = export_check.check_vocabulary(vocab_file, self.metadata,
                                               self.metadata_file())
    self.tokenizer = tokenization.FullTokenizer(vocab_file,
                                                do_lower_case=self.metadata["do_lower_case"],
                                                normalize=self.metadata.get("normalize"))
    self._runner = None

  def metadata_file(self):
    """The model.json beside the model (named in messages)."""
    return paths.join(paths.dirname(self.model_file), litert_metadata.METADATA_FILE)

  def describe(self):
    """"Mrpc's classifier (labels 0, 1)": what the model predicts, for messages."""
    what = {"classifier": "classifier", "regression": "regression",
            "multi_label": "multi-label classifier"}.get(self.head, f"{self.head} model")
    labels = f" (labels {', '.join(map(str, self.labels))})" if self.labels else ""
    return f"{self.metadata.get('task', '?')}'s {what}{labels}"

  def runner(self):
    """The signature runner (the interpreter is built on first use)."""
    if self._runner is None:
      try:
        from ai_edge_litert.interpreter import Interpreter  # pylint: disable=g-import-not-at-top
      except ImportError:
        raise UserError(f"{self.named}: running a LiteRT model needs the "
                        f"ai-edge-litert package: {INSTALL_HINT}") from None
      try:
        interpreter = Interpreter(model_path=self.model_file, num_threads=self.num_threads)
        signature = interpreter.get_signature_list().get(litert_metadata.SIGNATURE)
      except (ValueError, RuntimeError) as exc:
        raise UserError(f"{self.named}: not a LiteRT model this runtime loads "
                        f"({export_check.first_line(exc)})") from None
      export_check.check_signature(self.named, signature, self.metadata,
                                   self.metadata_file())
      self._runner = interpreter.get_signature_runner(litert_metadata.SIGNATURE)
      try:
        self._probe()
      except UserError:
        self._runner = None  # a model that failed its probe is never run
        raise
    return self._runner

  def _probe(self):
    """One row of max_seq_length tokens through the model: a max_seq_length past its
    positions, or outputs of another shape than model.json's, refused before any file."""
    try:
      outputs = self._invoke([export_check.probe_row(self.vocab, self.max_seq_length)])
    except UserError as exc:
      raise UserError(f"{exc} (a row of model.json's max_seq_length="
                      f"{self.max_seq_length} tokens; {self.metadata_file()} may not be "
                      "this model's own)") from None
    export_check.check_outputs(self.named, outputs, self.metadata, self.metadata_file())

  def encode(self, text_a, text_b=None):
    """(ids, segment_ids) of one example: the original's tokenization and packing."""
    tokens, segments = tokenization.pack_tokens(
        self.tokenizer.tokenize(text_a),
        self.tokenizer.tokenize(text_b) if text_b is not None else None,
        self.max_seq_length)
    return self.tokenizer.convert_tokens_to_ids(tokens), segments

  def _invoke(self, rows):
    length = max(len(ids) for ids, _ in rows)
    ids = np.zeros((len(rows), length), np.int32)
    segments = np.zeros_like(ids)
    mask = np.zeros_like(ids)
    for row, (row_ids, row_segments) in enumerate(rows):
      ids[row, :len(row_ids)] = row_ids
      segments[row, :len(row_ids)] = row_segments
      mask[row, :len(row_ids)] = 1
    feed = {"input_ids": ids, "input_mask": mask, "segment_ids": segments}
    try:
      return self._runner(**{name: feed[name] for name in self.metadata["inputs"]})
    except (ValueError, RuntimeError) as exc:  # the runtime's invoke errors
      raise UserError(f"{self.named}: the LiteRT runtime failed on a batch of {len(rows)} "
                      f"row(s) of {length} tokens ({export_check.first_line(exc)})") from None

  def run(self, rows):
    self.runner()
    return self._invoke(rows)

  def predict(self, rows, batch_size, output):
    """The `output` array of every row, in the rows' order. Rows are batched by length
    (sorted, stable) so that each batch pads little; the order is restored after."""
    if batch_size < 1:
      raise ValueError(f"batch_size={batch_size}: must be at least 1")
    order = sorted(range(len(rows)), key=lambda i: len(rows[i][0]))
    result = None
    for start in range(0, len(order), batch_size):
      chosen = order[start:start + batch_size]
      values = np.asarray(self.run([rows[i] for i in chosen])[output])
      if result is None:
        result = np.zeros((len(rows),) + values.shape[1:], values.dtype)
      result[chosen] = values
    return result


def load_model(model_file, num_threads=None, flag="--model"):
  """A LiteRTModel (model.json and vocab.txt read and checked against each other; the
  interpreter built, and checked against them, on first use: `runner()`)."""
  return LiteRTModel(model_file, num_threads, flag)


def check_served(model, program="predict_litert.py"):
  """Refuses a model whose head this predictor does not serve, saying which it serves
  and where the others go."""
  if model.head not in SERVED_HEADS:
    where = NOT_SERVED.get(model.head, "")
    raise UserError(f"{model.named} is {model.describe()}; {program} serves classifier, "
                    "regression and multi-label models (run_classifier.py's and "
                    "run_multilabel.py's exports)" + (f"; {where}" if where else ""))


# --------------------------------------------------------------------------- tasks


def _processor_name(processor):
  return type(processor).__name__.replace("Processor", "") or "classifier"


def classifier_processor(model, task_name=None, xnli_language=None, columns=None):
  """The classifier_examples processor that reads --task_name's files for `model`; refuses a
  model of another task, or --label_list / --regression that differ from the model's."""
  metadata = model.metadata
  if model.head not in CLASSIFIER_HEADS:
    raise UserError(f"{model.named} is {model.describe()}, not a classifier or regression "
                    "model")
  task_name = task_name or metadata.get("task_name")
  if not task_name:
    raise UserError(f"--task_name is required: {model.metadata_file()} names no task_name")
  xnli_language = (xnli_language or metadata.get("xnli_language")
                   or classifier_data.XNLI_LANGUAGE)
  regression = model.head == "regression"
  if task_name.lower() in classifier_data.GENERIC_TASKS:
    columns = columns or classifier_examples.DelimitedFileOptions()
    if columns.regression is not None and bool(columns.regression) != regression:
      raise UserError(f"--regression={columns.regression}: {model.named} is "
                      f"{model.describe()}")
    if columns.label_list and [str(l) for l in columns.label_list] != list(model.labels or []):
      raise UserError(f"--label_list={','.join(columns.label_list)}: {model.named} is "
                      f"{model.describe()}; its labels are the model's own (leave "
                      "--label_list out)")
    # The model's own labels and head, which the flags may only repeat (checked above).
    columns = dataclasses.replace(
        columns, label_list=tuple(model.labels) if model.labels else None,
        regression=regression)
  processor = classifier_data.get_processor(task_name, xnli_language, columns)
  name = _processor_name(processor)
  labels = None if processor.is_regression else [str(l) for l in processor.get_labels()]
  model_labels = None if regression else [str(l) for l in (model.labels or [])]
  if (name != metadata.get("task") or processor.is_regression != regression
      or labels != model_labels):
    raise UserError(f"{model.named} is {model.describe()}, not "
                    f"--task_name={task_name}'s {name}"
                    + (f" (labels {', '.join(labels)})" if labels else " (regression)")
                    + "; use that task's model")
  if (metadata.get("num_texts") and processor.num_texts != metadata["num_texts"]):
    raise UserError(f"{model.named} reads {metadata['num_texts']} text(s) per example, "
                    f"--task_name={task_name}'s files {processor.num_texts} (check "
                    "--text_b_column)")
  return processor


def predict_classifier(model, examples, batch_size):
  """Class probabilities float [N, labels] (or regression scores [N]) of InputExamples."""
  rows = [model.encode(e.text_a, e.text_b) for e in examples]
  output = "score" if model.head == "regression" else "probabilities"
  return model.predict(rows, batch_size, output)


def predict_multilabel(model, examples, batch_size):
  """Per-label probabilities float [N, labels] of multilabel_data.MultiLabelExamples."""
  rows = [model.encode(e.text) for e in examples]
  return model.predict(rows, batch_size, "probabilities")


def predict_files(model_file, data_dir, output_dir, batch_size, task_name=None,
                  num_threads=None, xnli_language=None, columns=None, log=None):
  """Writes the prediction files of --do_predict for data_dir's test file(s) into
  output_dir with the LiteRT model `model_file`, `batch_size` rows a call (the command's
  --predict_batch_size); returns the paths written."""
  log = log or (lambda *args: None)
  model = load_model(model_file, num_threads)
  check_served(model)
  if not os.path.isdir(data_dir):
    raise UserError(f"--data_dir={data_dir}: no such directory")
  multi_label = model.head == MULTI_LABEL_HEAD
  asked_multi = bool(task_name) and task_name.lower() in MULTI_LABEL_TASK_NAMES
  if multi_label and task_name and not asked_multi:
    raise UserError(f"{model.named} is {model.describe()}, not a model of "
                    f"--task_name={task_name}; use that task's model (or "
                    "--task_name=multilabel)")
  if asked_multi and not multi_label:
    raise UserError(f"{model.named} is {model.describe()}, not a multi-label "
                    f"classifier (--task_name={task_name})")
  # The task is checked first (model.json alone), then the model is loaded, then the
  # files are read: each refusal comes before the costlier step and before any output.
  if multi_label:
    if not model.labels:
      raise UserError(f"{model.metadata_file()}: a multi-label model without labels")
    model.runner()
    path = multilabel_data.data_file(data_dir, "test")
    input_checks.check_input_file(path, "data_dir")
    examples = multilabel_data.read_examples(path, model.labels, require_labels=False)
    log("%d test lines from %s", len(examples), path)
    atomic_output.ensure_output_dir(output_dir)  # before the work, as the classifier's
    probabilities = predict_multilabel(model, examples, batch_size)
    out = paths.join(output_dir, "test_results.tsv")
    threshold = float(model.metadata.get("threshold", multilabel_data.THRESHOLD))
    multilabel_data.write_results(out, model.labels, probabilities.astype(np.float64),
                                  threshold)
    return [out]
  processor = classifier_processor(model, task_name, xnli_language, columns)
  model.runner()
  if hasattr(processor, "set_data_dir"):
    processor.set_data_dir(data_dir)
  predict_sets = processor.get_predict_sets(data_dir)  # every file read before any work
  atomic_output.ensure_output_dir(output_dir)
  written = []
  for predict_set in predict_sets:
    log("%s: %d examples", predict_set.name, len(predict_set.examples))
    outputs = predict_classifier(model, predict_set.examples, batch_size)
    outputs = outputs.astype(np.float64)
    predictions = outputs if processor.is_regression else outputs.argmax(axis=1)
    path = paths.join(output_dir, predict_set.results_file)
    classifier_examples.write_probabilities(path, outputs)
    written.append(path)
    if predict_set.submission_file:
      path = paths.join(output_dir, predict_set.submission_file)
      classifier_examples.write_submission(path, processor, predict_set.examples, predictions)
      written.append(path)
  return written
