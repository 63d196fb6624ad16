"""What a stock TensorFlow install sees of an exported ids SavedModel, shared by the tests
of every script that exports one (run_classifier, run_multilabel, ...).

`answer_without_tensorflow_text(model_dir, ids, env)` loads `model_dir` in a fresh
interpreter in which `import tensorflow_text` fails, calls its serving_default on
`ids` = [input_ids, input_mask, segment_ids] (int lists [batch, seq]) and returns
(outputs {name: list}, sorted signature names, whether tensorflow_text got imported).
With `then` (Python source), the same interpreter afterwards lifts the block and runs
`then` (it may `import tensorflow_text` and load a raw-text SavedModel; its last line of
output is returned as a fourth value): one interpreter start instead of two.
"""
import json
import subprocess
import sys

NO_TF_TEXT = r"""
import importlib.abc, json, sys
class Block(importlib.abc.MetaPathFinder):
  def find_spec(self, name, path=None, target=None):
    if name == "tensorflow_text" or name.startswith("tensorflow_text."):
      raise ImportError("tensorflow_text is blocked in this test")
    return None
block = Block()
sys.meta_path.insert(0, block)
import tensorflow as tf
try:
  import tensorflow_text  # noqa: F401
  raise SystemExit("tensorflow_text was importable")
except ImportError:
  pass
ids = json.loads(sys.argv[2])
model = tf.saved_model.load(sys.argv[1])
out = model.signatures["serving_default"](
    input_ids=tf.constant(ids[0], tf.int32), input_mask=tf.constant(ids[1], tf.int32),
    segment_ids=tf.constant(ids[2], tf.int32))
print(json.dumps({k: v.numpy().tolist() for k, v in out.items()}))
print(json.dumps(sorted(model.signatures)))
print("tensorflow_text" in sys.modules)
if len(sys.argv) > 3:  # `then`, once the ids model has answered
  sys.stdout.flush()
  sys.meta_path.remove(block)
  exec(sys.argv[3])
"""


def answer_without_tensorflow_text(model_dir, ids, env, then=None):
  blocked = subprocess.run([sys.executable, "-c", NO_TF_TEXT, str(model_dir),
                            json.dumps(ids), *([then] if then else [])],
                           capture_output=True, text=True, env=env, timeout=300)
  assert blocked.returncode == 0, blocked.stderr[-2000:]
  lines = blocked.stdout.strip().splitlines()
  if then:
    # The three lines of the ids model come before what `then` prints.
    first = next(i for i, line in enumerate(lines) if line in ("True", "False"))
    answer, signatures, imported = lines[first - 2:first + 1]
    return (json.loads(answer), json.loads(signatures), imported == "True",
            lines[-1] if len(lines) > first + 1 else None)
  answer, signatures, imported = lines[-3:]
  return json.loads(answer), json.loads(signatures), imported == "True"
