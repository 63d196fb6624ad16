"""TF Serving's versioned layout as servers mean it: versions side by side, each whole.

In-process on the tiny classifier, one model exported with other head weights each time
(never trained): two versions written side by side, then a third; every one loads and
answers with the weights it was written with; an existing version is refused in one line
with nothing changed on disk, and replaced (that folder only) when asked; an export that
fails half-way leaves no folder a server would load. The default suite writes the
token-id model alone (one SavedModel a version, a few seconds); the raw-text model beside
it (three more SavedModels, each with the tokenizer's graph) is the slow test.
"""
import shutil
import os

import numpy as np
import pytest
import tensorflow as tf

from bert.formats import serving
from bert import heads
from bert.utils import errors
import tiny

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat"]


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
  from bert import fast_tokenization  # pylint: disable=g-import-not-at-top
  root = tmp_path_factory.mktemp("versions")
  vocab = root / "vocab.txt"
  vocab.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
  # One layer: the versions' folders are the same for any depth, and each export grows
  # with the layers.
  config = tiny.tiny_config(len(VOCAB), num_hidden_layers=1)
  model, _ = heads.build_classifier_model(config, 2)
  tokenizer = fast_tokenization.FastTokenizer(str(vocab), True)
  return model, tokenizer


def _export(model, tokenizer, export_dir, version, overwrite=False):
  return serving.export_classifier(str(export_dir), model, ["0", "1"], tokenizer=tokenizer,
                                   max_seq_length=16, cls_id=tokenizer.cls_id,
                                   sep_id=tokenizer.sep_id, version=version,
                                   overwrite=overwrite)


IDS = {"input_ids": tf.constant([[2, 5, 6, 7, 3, 0]], tf.int32),
       "input_mask": tf.constant([[1, 1, 1, 1, 1, 0]], tf.int32),
       "segment_ids": tf.constant([[0, 0, 0, 0, 0, 0]], tf.int32)}


def _answer(path):
  return tf.saved_model.load(str(path)).signatures["serving_default"](
      **IDS)["probabilities"].numpy()


def _tree(root):
  return sorted(os.path.relpath(os.path.join(d, n), root)
                for d, dirs, files in os.walk(root) for n in dirs + files)


def _set_bias(model, value):
  bias = [w for w in model.weights if "output_bias" in w.path][0]
  bias.assign(np.array([value, -value], np.float32))


def _export_ids(model, export_dir, version, overwrite=False):
  """The token-id model alone (run_squad's export): one SavedModel, the cheaper write."""
  return serving.write_serving_models(
      str(export_dir), serving.classifier_endpoints(model, ["0", "1"]), track=[model],
      version=version, overwrite=overwrite)


def _expected(model):
  """What the token-id signature must answer with the model's weights now."""
  logits = model(IDS, training=False)["logits"].numpy()
  return tf.nn.softmax(logits, axis=-1).numpy()


def _three_versions(model, export, export_dir):
  """Versions 1 and 2 side by side, then a third, each with other head weights:
  {version: expected answer}, {version: paths}."""
  expected, paths = {}, {}
  for version, bias in ((1, 0.5), (2, -1.0), (3, 2.0)):
    _set_bias(model, bias)
    paths[version] = export(export_dir, version)
    expected[version] = _expected(model)
    if version == 2:
      assert serving.versions(export_dir / "ids") == [1, 2]
  assert expected[1][0, 0] > expected[1][0, 1] and expected[2][0, 0] < expected[2][0, 1]
  assert not np.allclose(expected[2], expected[3])
  return expected, paths


@pytest.fixture(scope="module")
def three_versions(parts, tmp_path_factory):
  """The token-id model written as versions 1, 2, then 3: expected, paths, export_dir."""
  model, _ = parts
  export_dir = tmp_path_factory.mktemp("three") / "export"
  expected, paths = _three_versions(
      model, lambda directory, version: _export_ids(model, directory, version), export_dir)
  return expected, paths, export_dir


def test_versions_side_by_side_then_a_third_all_loadable(three_versions):
  expected, paths, export_dir = three_versions
  assert paths[3] == {"ids": f"{export_dir}/ids/3", "text": None}
  assert sorted(os.listdir(export_dir)) == ["ids"]
  assert sorted(os.listdir(export_dir / "ids")) == ["1", "2", "3"]
  assert serving.versions(export_dir / "ids") == [1, 2, 3]
  # Each version answers with the weights it was written with (the biases differ, so
  # do the answers).
  for version in (1, 2, 3):
    np.testing.assert_allclose(_answer(export_dir / "ids" / str(version)),
                               expected[version], atol=1e-6)


@pytest.mark.slow  # 25 s on 2 cores: six SavedModels, three with the tokenizer's graph
def test_raw_text_versions_side_by_side_then_a_third_all_loadable(parts, tmp_path):
  model, tokenizer = parts
  export_dir = tmp_path / "export"
  expected, paths = _three_versions(
      model, lambda directory, version: _export(model, tokenizer, directory, version),
      export_dir)
  assert paths[3] == {"ids": f"{export_dir}/ids/3", "text": f"{export_dir}/text/3"}
  assert sorted(os.listdir(export_dir)) == ["ids", "text"]
  assert sorted(os.listdir(export_dir / "ids")) == ["1", "2", "3"]
  assert sorted(os.listdir(export_dir / "text")) == ["1", "2", "3"]
  assert serving.versions(export_dir / "text") == [1, 2, 3]
  for version in (1, 2, 3):
    np.testing.assert_allclose(_answer(export_dir / "ids" / str(version)),
                               expected[version], atol=1e-6)
    np.testing.assert_allclose(_answer(export_dir / "text" / str(version)),
                               expected[version], atol=1e-6)


def test_an_existing_version_is_refused_and_replaced_only_when_asked(parts, three_versions,
                                                                     tmp_path):
  model, tokenizer = parts
  expected, _, export_dir = three_versions
  before = {p: os.stat(export_dir / p).st_mtime_ns for p in _tree(export_dir)}
  with pytest.raises(errors.UserError) as refused:
    _export(model, tokenizer, export_dir, 1)
  assert str(refused.value) == (
      f"--export_version=1: {export_dir}/ids/1 already exists (versions there: 1, 2, 3); a "
      "server may be serving it: choose a new version number, or pass --overwrite_export "
      "to replace that version")
  assert {p: os.stat(export_dir / p).st_mtime_ns for p in _tree(export_dir)} == before
  # Asked: version 1 is replaced, versions 2 and 3 are untouched (in a copy: the other
  # tests read the three versions as written).
  export_dir = shutil.copytree(export_dir, tmp_path / "export")
  kept = {p: os.stat(export_dir / p).st_mtime_ns for p in _tree(export_dir)
          if p.startswith(("ids/2", "ids/3"))}
  _set_bias(model, -3.0)
  _export_ids(model, export_dir, 1, overwrite=True)
  assert sorted(os.listdir(export_dir / "ids")) == ["1", "2", "3"]
  replaced = _answer(export_dir / "ids" / "1")
  np.testing.assert_allclose(replaced, _expected(model), atol=1e-6)
  assert not np.allclose(replaced, expected[1])
  np.testing.assert_allclose(_answer(export_dir / "ids" / "2"), expected[2], atol=1e-6)
  assert kept == {p: os.stat(export_dir / p).st_mtime_ns for p in _tree(export_dir)
                  if p.startswith(("ids/2", "ids/3"))}


def test_an_unversioned_export_never_replaces_versions_nor_another_unasked(three_versions,
                                                                           tmp_path):
  _, _, export_dir = three_versions
  with pytest.raises(errors.UserError) as refused:
    serving.check_export_target(str(export_dir), 0, overwrite=True)
  assert str(refused.value) == (
      f"--export_dir={export_dir}: holds versioned exports (ids/ 1, 2, 3); an export "
      "without --export_version would replace them all: pass --export_version=N "
      "(a new N)")
  plain = tmp_path / "plain"
  plain.mkdir()
  serving.check_export_target(str(plain), 0)  # empty: fine
  (plain / "saved_model.pb").write_bytes(b"")
  with pytest.raises(errors.UserError) as refused:
    serving.check_export_target(str(plain), 0)
  assert str(refused.value) == (
      f"--export_dir={plain}: exists and is not empty; choose a new directory, pass "
      "--export_version=N to add a version beside others, or --overwrite_export to replace "
      "it")
  serving.check_export_target(str(plain), 0, overwrite=True)
  with pytest.raises(errors.UserError, match="exists and is not a directory"):
    serving.check_export_target(str(plain / "saved_model.pb"), 1)


def test_a_failed_export_leaves_no_version_a_server_would_load(parts, tmp_path,
                                                               monkeypatch):
  model, tokenizer = parts
  export_dir = tmp_path / "export"
  (export_dir / "ids" / "1").mkdir(parents=True)  # a version already there
  real = serving._write_archive  # pylint: disable=protected-access
  seen = []

  def fail_on_the_text_model(path, endpoints, track):
    # While version 2 is written, a reader listing ids/ sees version 1 only: the folder
    # being written is not named by an integer.
    seen.append((os.path.basename(path), serving.versions(export_dir / "ids")))
    if len(seen) == 2:
      raise OSError(28, "No space left on device", path)
    real(path, endpoints, track)

  monkeypatch.setattr(serving, "_write_archive", fail_on_the_text_model)
  with pytest.raises(errors.UserError, match="the disk is full"):
    _export(model, tokenizer, export_dir, 2)
  assert [versions for _, versions in seen] == [[1], [1]]
  assert all(name.startswith(".2.tmp-") for name, _ in seen)
  assert sorted(os.listdir(export_dir / "ids")) == ["1"]
  assert sorted(os.listdir(export_dir / "text")) == []
