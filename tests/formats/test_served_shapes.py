"""Every served form refuses inputs whose shapes disagree, with oneDNN on and off.

oneDNN's fused attention (the mask's bias added inside the batch matmul) skips the
broadcast check that a separate add makes: an ids SavedModel fed a mask 8 wide beside ids
16 wide answered as if nothing were wrong. Each form is fed, in a process per oneDNN
setting (this test process for the setting its TensorFlow started with), a mask 8 and 32
wide, a mask of batch 1 beside ids of batch 2 (which broadcasts on every path), and
segment ids 8 wide: the token-id SavedModel (run_classifier.py --export_dir), the model
in-process (traced, and eagerly), the TF-Hub-style encoder, and the LiteRT model converted
from the export; and a pair of texts of two batch sizes: the raw-text SavedModel and the
TF-Hub-style preprocessor. Each is an error naming the inputs and their shapes (LiteRT's
runtime, which has no Assert, fails its stack of the three inputs instead of
answering)."""
import json
import os
import subprocess
import sys

import pytest

from bert.utils import cpu_choice
from conftest import ROOT
import served_shapes

IDS = "input_ids has shape] [2 16]"


def _expected():
  """{case: what its outcome must contain}."""
  expected = {}
  for case, mask, segments in served_shapes.MISMATCHES:
    shapes = (f"{IDS} [input_mask] [{mask[0]} {mask[1]}] [segment_ids] "
              f"[{segments[0]} {segments[1]}]")
    ours = "assertion failed: [bert: input_ids, input_mask and segment_ids must have the " \
           "same shape [batch, seq]; " + shapes
    expected[f"ids SavedModel, {case}"] = ours
    expected[f"in-process traced, {case}"] = ours
    name, shape = (("segment_ids", segments) if case.startswith("segments")
                   else ("input_mask", mask))
    expected[f"in-process eager, {case}"] = (
        f"bert: {name} has shape [{shape[0]}, {shape[1]}], input_ids [2, 16]; the three "
        "inputs must have the same shape")
    expected[f"TF-Hub encoder, {case}"] = (
        "assertion failed: [encoder: input_word_ids, input_mask and input_type_ids must "
        "have the same shape [batch, seq]; input_word_ids has shape] [2 16] [input_mask] "
        f"[{mask[0]} {mask[1]}] [input_type_ids] [{segments[0]} {segments[1]}]")
    expected[f"LiteRT, {case}"] = "(PACK) failed to prepare"
  pair = ("assertion failed: [the two texts of a pair (text_a and text_b) must have the "
          "same batch; text_a has rows:] [2] [text_b has rows:] [1]")
  expected["text SavedModel, pair of batches 2 and 1"] = pair
  # Called in-process, its batches are known when tracing: refused there.
  expected["TF-Hub preprocessor, pair of batches 2 and 1"] = (
      "the two texts of a pair (text_a and text_b) must have the same batch; text_a has "
      "2 rows, text_b 1")
  return expected


@pytest.fixture(scope="module")
def both_settings(tmp_path_factory):
  """{TF_ENABLE_ONEDNN_OPTS value: outcomes}: the forms are written once, here (an export
  holds no op its CPU or oneDNN setting chose: tests/formats/test_portable_exports.py),
  and fed here in the setting this test process's TensorFlow started with, and in a fresh
  process with the other (started first: its TensorFlow starts while this one exports)."""
  here = "1" if cpu_choice.onednn_state(cpu_choice.this_cpu())[0] else "0"
  workdir = str(tmp_path_factory.mktemp("served"))
  processes = {}
  for setting in ("1", "0"):
    if setting == here:
      continue
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS=setting, TF_CPP_MIN_LOG_LEVEL="3",
               PYTHONPATH=os.pathsep.join([ROOT, os.path.join(ROOT, "tests"),
                                           os.path.join(ROOT, "tests", "support")]))
    processes[setting] = subprocess.Popen(
        [sys.executable, served_shapes.__file__, workdir, "--wait"],
        env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
  try:
    served_shapes.export(workdir)
  except BaseException:
    for process in processes.values():
      process.kill()
    raise
  results = {here: json.loads(json.dumps(served_shapes.outcomes(workdir)))}
  for setting, process in processes.items():
    stdout, stderr = process.communicate(timeout=600)
    lines = [line for line in stdout.splitlines() if line.startswith("RESULTS ")]
    assert process.returncode == 0 and lines, stderr[-3000:]
    results[setting] = json.loads(lines[-1][len("RESULTS "):])
  assert set(results) == {"0", "1"}
  return results


@pytest.fixture(params=["1", "0"], ids=["oneDNN on", "oneDNN off"])
def outcomes(request, both_settings):
  return both_settings[request.param]


@pytest.mark.parametrize("case", sorted(_expected()))
def test_a_mismatch_is_an_error_naming_the_inputs_and_shapes(outcomes, case):
  assert _expected()[case] in outcomes[case], outcomes[case]


def test_the_right_shapes_still_answer_alike_on_every_form(outcomes):
  assert outcomes["good inputs"] == {"ids": True, "traced": True, "litert": True}
