"""SavedModel export shared by the scripts: serving signatures on token ids and on raw text.

`write_serving_models` is every script's one writer. It uses keras.export.ExportArchive
because its signatures are what `saved_model_cli run` and TF Serving execute
(`tf.saved_model.save` of a Keras 3 model reloads in Python but fails there). Stock
servers lack the tokenizer's tensorflow-text ops, so an export with a raw-text signature
also writes the token-id signatures alone, in stock ops; versions sit side by side as TF
Serving means them, each written under a temporary name and renamed when whole."""

import contextlib
import dataclasses
import os
from typing import Callable, Sequence

import keras
import tensorflow as tf

from bert import fast_tokenization
from bert import input_pipeline
from bert import modeling_config
from bert.formats import litert_convert
from bert.formats import litert_metadata
from bert.utils import atomic_output
from bert.utils import file_io
from bert.utils import paths
from bert.utils import output_lock
from bert.utils import errors

TEXT_NAMES = ("text_a", "text_b")
TOKEN_ID_NAMES = ("input_ids", "input_mask", "segment_ids")


@dataclasses.dataclass
class Endpoint:
  """One serving signature: `fn(*tensors matching input_signature) -> {name: tensor}`."""
  name: str
  fn: Callable
  input_signature: Sequence
  custom_ops: bool = False  # True: runs tensorflow-text ops (a raw-text signature)


def token_id_specs(batch_shape=(None,), seq_length=None):
  """int32 TensorSpecs input_ids, input_mask, segment_ids of shape batch_shape+[seq_length].

  seq_length None accepts any length up to max_position_embeddings, so clients may pad
  a batch only to its own longest row.
  """
  shape = list(batch_shape) + [seq_length]
  return [tf.TensorSpec(shape, tf.int32, name=name) for name in TOKEN_ID_NAMES]


def text_specs(num_texts):
  """tf.string [batch] specs named text_a (and text_b for pair tasks)."""
  if num_texts not in (1, 2):
    raise ValueError(f"num_texts must be 1 or 2, got {num_texts}")
  return [tf.TensorSpec([None], tf.string, name=name) for name in TEXT_NAMES[:num_texts]]


class TextPacker:
  """Raw text -> model inputs inside the graph, the original's conversion.

  tokenizer: a fast_tokenization.FastTokenizer. `__call__(text_a, text_b=None)` takes
  tf.string [batch] tensors and returns int32 [batch, seq] tensors input_ids,
  input_mask, segment_ids: [CLS] a [SEP] (b [SEP]), truncated as the original
  (longer text first), zero-padded. With trim_to_longest the batch is cut to its longest
  row instead of seq_length: same predictions (padding is masked out), less work.
  """

  def __init__(self, tokenizer, seq_length, cls_id, sep_id, trim_to_longest=True):
    self.tokenizer = tokenizer
    self.seq_length = int(seq_length)
    self.cls_id = int(cls_id)
    self.sep_id = int(sep_id)
    self.trim_to_longest = trim_to_longest

  def __call__(self, text_a, text_b=None):
    segments = [self.tokenizer.tokenize(text_a)]
    if text_b is not None:
      segments.append(self.tokenizer.tokenize(text_b))
    packed = fast_tokenization.pack_inputs(segments, self.seq_length, self.cls_id, self.sep_id)
    packed = {name: tf.cast(packed[name], tf.int32) for name in TOKEN_ID_NAMES}
    if self.trim_to_longest:
      packed = input_pipeline.trim_to_longest(packed, TOKEN_ID_NAMES)
    return packed


def _write_archive(path, endpoints, track):
  archive = keras.export.ExportArchive()
  for resource in track:
    archive.track(resource)
  names = [endpoint.name for endpoint in endpoints]
  for endpoint in endpoints:
    archive.add_endpoint(endpoint.name, endpoint.fn,
                         input_signature=list(endpoint.input_signature))
  if "serving_default" not in names and endpoints:
    first = endpoints[0]
    archive.add_endpoint("serving_default", first.fn,
                         input_signature=list(first.input_signature))
  archive.write_out(path, verbose=False)


def serving_paths(export_dir, version=0, has_text=True, has_litert=False):
  """{"text": path or None, "ids": path} of write_serving_models' layout, and "litert":
  the LiteRT models' folder when has_litert."""
  if version:
    found = {"text": f"{export_dir}/text/{version}" if has_text else None,
             "ids": f"{export_dir}/ids/{version}"}
  else:
    found = {"text": export_dir if has_text else None,
             "ids": f"{export_dir}/ids" if has_text else export_dir}
  if has_litert:
    found["litert"] = litert_metadata.folder(export_dir, version)
  return found


def _listdir(path):
  return file_io.listdir(path) if file_io.isdir(path) else []


def versions(model_base_path):
  """The whole versions under a model base path (export_dir/ids or export_dir/text), as
  TF Serving sees them: the folders named by an integer, ascending. The temporaries of
  an export in progress (`.N.tmp-...`) are not integers, so no reader picks one up."""
  names = [n for n in _listdir(model_base_path) if n.isdigit()]
  # a file named 3 is not version 3
  names = [n for n in names if file_io.isdir(paths.join(model_base_path, n))]
  return sorted(int(n) for n in names if n.isdigit())


# The folders of export_dir that hold versions side by side (TF Serving's model base
# paths, and the LiteRT models of the same versions).
_VERSIONED_KINDS = output_lock.VERSIONED_KINDS


def check_export_target(export_dir, version=0, overwrite=False):
  """Refuses, before any work, an export that would replace what is there unasked.

  version N >= 1: export_dir/ids/N, text/N or litert/N exists (the other versions stay
  as they are); version 0: export_dir exists and is not empty. With `overwrite` the one
  version folder (or the unversioned export) is replaced, but a version-0 export never
  replaces a folder that holds versions. A file where a folder goes is refused too, even
  with `overwrite` (it is the user's, not an export of ours: never moved nor removed).
  """
  flag = f"--export_dir={export_dir}"
  isdir = file_io.isdir
  exists = file_io.exists(export_dir)
  if exists and not isdir(export_dir):
    raise errors.UserError(f"{flag}: exists and is not a directory")
  if version:
    # A version a killed run of this command left half-moved is replaced as a whole.
    half_moved = any(atomic_output.left_half_moved(
        f"{export_dir.rstrip('/')}/{kind}/{version}", f"--export_version={version}")
                     for kind in _VERSIONED_KINDS)
    for kind in _VERSIONED_KINDS:
      base = f"{export_dir.rstrip('/')}/{kind}"
      if file_io.exists(base) and not isdir(base):
        raise errors.UserError(f"{flag}: {base} exists and is not a directory")
      target = f"{base}/{version}"
      if file_io.exists(target) and not isdir(target):
        raise errors.UserError(
            f"--export_version={version}: {target} is a file, not an exported version (a "
            "folder); it is left as it is, even with --overwrite_export: move it away, or "
            "choose another version number")
      if version in versions(base) and not overwrite and not half_moved:
        raise errors.UserError(
            f"--export_version={version}: {base}/{version} already exists (versions there: "
            f"{', '.join(map(str, versions(base)))}); a server may be serving it: choose a "
            "new version number, or pass --overwrite_export to replace that version")
    return
  if exists and _listdir(export_dir):
    held = {kind: versions(f"{export_dir.rstrip('/')}/{kind}") for kind in _VERSIONED_KINDS}
    if any(held.values()):
      listed = "; ".join(f"{kind}/ {', '.join(map(str, v))}" for kind, v in held.items() if v)
      raise errors.UserError(
          f"{flag}: holds versioned exports ({listed}); an export without "
          "--export_version would replace them all: pass --export_version=N (a new N)")
    if not overwrite and not atomic_output.left_half_moved(export_dir, flag):
      raise errors.UserError(
          f"{flag}: exists and is not empty; choose a new directory, pass "
          "--export_version=N to add a version beside others, or --overwrite_export to "
          "replace it")


def _check_still_free(export_dir, version, overwrite, checked):
  """check_export_target again, holding the export's lock. When the target was `checked`
  free before the run's work (the driver does), what is there now another run has just
  written: said so, with the flag that would replace it."""
  if checked and not overwrite:
    if version:
      taken = [f"{export_dir.rstrip('/')}/{kind}/{version}" for kind in _VERSIONED_KINDS]
      taken = [path for path in taken if file_io.isdir(path)]
      if taken:
        raise errors.UserError(
            f"--export_version={version}: another run has just written {taken[0]} (it was "
            "not there when this run started); this run's export is not written: choose a "
            "new version number, or pass --overwrite_export to replace that version")
    elif file_io.isdir(export_dir) and _listdir(export_dir):
      raise errors.UserError(
          f"--export_dir={export_dir}: another run has just written an export there (it "
          "was empty or missing when this run started); this run's export is not written: "
          "choose a new directory, or pass --overwrite_export to replace it")
  check_export_target(export_dir, version, overwrite)


def write_serving_models(export_dir, endpoints, track=(), version=0, overwrite=False,
                         checked=False, litert=None, log=None):
  """Writes the serving layout; returns serving_paths.

    export_version 0 (default)  export_dir/         every signature (token ids and raw text)
                                export_dir/ids/     the token-id signatures only (stock ops)
    export_version N            export_dir/text/N/  every signature
                                export_dir/ids/N/   the token-id signatures only
                                (TF Serving's layout: export_dir/ids is a model_base_path)

  An export without a raw-text signature (run_squad) is itself of stock ops: export_dir/
  (or export_dir/ids/N/) alone. The LiteRT models go beside ids/: export_dir/litert/ or
  export_dir/litert/N/.

  litert: a litert_metadata.Request (the LiteRT models to convert from the ids model, checked
  against it, into litert/ or litert/N/ under the same temporary-then-rename rule), or
  None for none. With `overwrite` and no litert, a litert/N of the version replaced is
  removed too (it would describe the old weights). log: absl's logging.info or None.

  endpoints: every signature; those with custom_ops (raw text) go to the text model only.
  track: what the endpoints use; tensorflow-text resources (a FastTokenizer) are tracked
  by the text model only, so the token-id model holds no custom op.

  version N >= 1 adds ids/N and text/N beside the versions already there, each written
  under a temporary name in its base folder (`.N.tmp-...`, which TF Serving ignores: not
  an integer) and renamed into place when whole; nothing else in export_dir is touched.
  An existing version N is refused (check_export_target) unless `overwrite`, which
  replaces that version folder only. version 0 writes export_dir as a whole, atomically.

  The export is written holding its lock (output_lock.lock_export): a second export of
  the same folder waits for the first, and the temporaries of an export killed earlier
  are removed. checked: the target was found free when the run started (the driver's
  check_export_target), so a version there now was written by another run meanwhile.
  """
  if version is None or version < 0:
    raise ValueError(f"export version {version}: must be 0 (no version folder) or >= 1")
  ids_endpoints = [e for e in endpoints if not e.custom_ops]
  if not ids_endpoints:
    raise ValueError("no token-id signature to export")
  has_text = len(ids_endpoints) != len(endpoints)
  targets = serving_paths(export_dir, version, has_text, has_litert=litert is not None)
  ids_track = [t for t in track if isinstance(t, keras.layers.Layer)]
  # Checked before the lock unless the driver checked it before training.
  check = None if checked else lambda: check_export_target(export_dir, version, overwrite)
  with output_lock.locked_export(
      export_dir, check, lambda: _check_still_free(export_dir, version, overwrite, checked),
      version):
    if version:
      parts = [("ids", ids_endpoints, ids_track)] + (
          [("text", endpoints, track)] if has_text else [])
      stale_litert = litert_metadata.folder(export_dir, version)
      with contextlib.ExitStack() as stack:
        temporaries = {}
        for kind, kind_endpoints, kind_track in parts:
          file_io.makedirs(paths.dirname(targets[kind]))
          tmp = stack.enter_context(atomic_output.atomic_path(
              targets[kind], overwrite=overwrite, overwrite_flag="--overwrite_export"))
          _write_archive(tmp, kind_endpoints, kind_track)
          temporaries[kind] = tmp
        if litert is not None:
          file_io.makedirs(paths.dirname(targets["litert"]))
          tmp = stack.enter_context(atomic_output.atomic_path(
              targets["litert"], overwrite=overwrite, overwrite_flag="--overwrite_export"))
          litert_convert.write(temporaries["ids"], tmp, litert, targets["litert"], log)
          temporaries["litert"] = tmp
        if paths.is_url(export_dir):
          # Every part of the version is marked before the first moves: a run killed
          # between two parts leaves the others marked, and its rerun replaces them all.
          for kind, tmp in temporaries.items():
            atomic_output.mark_moving(tmp, targets[kind])
        # Every part is whole on disk before any is renamed into place (the
        # atomic_paths close in reverse order: litert/N, text/N, then ids/N).
      if litert is None and overwrite and file_io.isdir(stale_litert):
        file_io.rmtree(stale_litert)
      return targets
    with atomic_output.atomic_path(export_dir, overwrite=overwrite,
                                   overwrite_flag="--overwrite_export") as tmp:
      local = serving_paths(tmp, version, has_text, has_litert=litert is not None)
      if has_text:
        # A relative export_dir has a relative temporary, whose dirname is "".
        file_io.makedirs(paths.dirname(local["text"]) or os.curdir)
        _write_archive(local["text"], endpoints, track)
      file_io.makedirs(paths.dirname(local["ids"]) or os.curdir)
      _write_archive(local["ids"], ids_endpoints, ids_track)
      if litert is not None:
        litert_convert.write(local["ids"], local["litert"], litert, targets["litert"], log)
  return targets


# --------------------------------------------------------------------------- classifier


def classifier_endpoints(model, label_list, packer=None, num_texts=1):
  """run_classifier's signatures.

  model: a heads.build_classifier_model model (output "logits" float32 [batch, n]).
  label_list: the label strings (index = label id), or None for regression (n = 1).

  * "serving_default": input_ids, input_mask, segment_ids int32 [batch, seq] ->
    classification: probabilities float32 [batch, num_labels], label_id int32 [batch];
    regression: score float32 [batch].
  * "serve_text" (when a packer is given): text_a (and text_b for pair tasks) tf.string
    [batch] -> the same outputs plus label tf.string [batch] (classification).
  """
  regression = label_list is None

  def head(features):
    logits = model({name: features[name] for name in TOKEN_ID_NAMES}, training=False)
    logits = tf.cast(logits["logits"], tf.float32)
    if regression:
      return {"score": logits[:, 0]}
    probabilities = tf.nn.softmax(logits, axis=-1)
    return {"probabilities": probabilities,
            "label_id": tf.argmax(probabilities, axis=-1, output_type=tf.int32)}

  def serve_ids(input_ids, input_mask, segment_ids):
    return head({"input_ids": input_ids, "input_mask": input_mask,
                 "segment_ids": segment_ids})

  endpoints = [Endpoint("serving_default", serve_ids, token_id_specs())]
  if packer is not None:
    labels = None if regression else tf.constant(list(label_list), dtype=tf.string)

    def serve_text(*texts):
      outputs = head(packer(*texts))
      if labels is not None:
        outputs["label"] = tf.gather(labels, outputs["label_id"])
      return outputs

    endpoints.append(Endpoint("serve_text", serve_text, text_specs(num_texts),
                              custom_ops=True))
  return endpoints


def export_classifier(export_dir, model, label_list, tokenizer=None,
                      max_seq_length=modeling_config.DEFAULT_MAX_SEQ_LENGTH,
                      cls_id=None, sep_id=None, num_texts=1, version=0,
                      overwrite=False, checked=False, litert=None, log=None):
  """Exports a classifier with its token-id and (given a FastTokenizer) raw-text signatures
  in the serving layout (write_serving_models; litert: its LiteRT models, a
  litert_metadata.Request or None); returns its paths."""
  packer = None
  if tokenizer is not None:
    packer = TextPacker(tokenizer, max_seq_length, cls_id, sep_id)
  endpoints = classifier_endpoints(model, label_list, packer, num_texts)
  track = [model]
  if tokenizer is not None and isinstance(tokenizer, tf.__internal__.tracking.Trackable):
    track.append(tokenizer)
  return write_serving_models(export_dir, endpoints, track=track, version=version,
                              overwrite=overwrite, checked=checked, litert=litert, log=log)
