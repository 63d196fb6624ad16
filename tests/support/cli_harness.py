"""Runs many command lines of ONE script in one process, through its real CLI path.

Why: every `python run_x.py ...` pays 4-6 s of TensorFlow import on a 2-core machine, so a
catalogue of 80 bad inputs as 80 subprocesses would cost minutes. Here the script file is
executed once as `__main__` (so its `if __name__ == "__main__":` block runs too: some mark
flags required there) with `absl.app.run` intercepted to capture `main`; then every case
calls the real `app.run(main, argv, flags_parser=...)`: the command's flag parsing
(launch.parse_flags), required-flag validators, `report_user_errors`, `SystemExit`.
Between cases the flags are reset to their defaults.
File descriptors 1 and 2 are redirected per case, so everything a user would see on the
terminal (Python, absl logging, TensorFlow's C++ logs) is captured.

A tool that does not run under absl (tools/*.py reading argparse or sys.argv) is loaded
as a module instead, and each case calls its `main(argv)`, which parses, reports and
exits as the command line does.

Usage (from the tests): python tests/support/cli_harness.py SCRIPT.py CASES.json RESULTS.json
CASES.json: [{"id": str, "argv": [str, ...], "setup": [action, ...], "cwd": DIR,
              "env": {NAME: VALUE}}, ...]
  cwd (optional): the case runs from that directory (relative paths as a user types
  them), back in the repository root afterwards; env (optional): environment variables
  set for that case only (TF_CONFIG, HOME, ...).
RESULTS.json: {id: {"exit": int|None, "stderr": str, "stdout": str, "crashed": bool,
                    "seconds": float, "flags": [every flag the script defines],
                    "after": [what each "after" action found]}}
  A case's "after" actions (see _after) run in this process once the case is done.

Setup actions (run in this process before the case, with TensorFlow available):
  {"tfrecord": PATH, "features": {name: ["int64"|"float", [values...]]}, "count": N}
      N identical tf.train.Examples; "truncate_by": B cuts the last B bytes off.
  {"google_checkpoint": PREFIX, "bert_config": PATH, "head": "pretraining"}
      a randomly initialised encoder saved in Google's TF1 layout; with "head", the
      pretraining model (encoder, masked-LM and next-sentence heads).
  {"upload": LOCAL, "to": URL}
      copies a local file or folder to a URL (ram:// lives in this process only).
  {"truncate": PATH, "by": B}
      cuts the last B bytes off a file (a checkpoint's .data after an interrupted copy).
  {"copy": SRC, "to": DST}
      copies the folder SRC (made by an earlier case's setup) to DST.
  {"scalars": DIR, "tag": NAME, "values": [v, ...]}
      TensorBoard scalars NAME at steps 1, 2, ... in DIR (a run's train/ curves).
  {"foreign_checkpoint": DIR, "bert_config": PATH, "num_labels": K, "head_info": STR}
      a training-loop style checkpoint (step, model, encoder, model_signature) of a
      classifier built from that config (with "head": "pretraining", of the pretraining
      model), as a previous run with a different model (another
      size, or another task) would leave in output_dir; with "head_info", that string
      recorded as the checkpoint's head_info (valid or not).
"""

import json
import os
import re
import sys
import tempfile
import time
import traceback
import types


def _setup(action):
  import tensorflow as tf  # pylint: disable=g-import-not-at-top
  if "tfrecord" in action:
    feature = {}
    for name, (kind, values) in action["features"].items():
      if kind == "int64":
        feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=values))
      else:
        feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=values))
    record = tf.train.Example(features=tf.train.Features(feature=feature))
    os.makedirs(os.path.dirname(action["tfrecord"]), exist_ok=True)
    with tf.io.TFRecordWriter(action["tfrecord"]) as writer:
      for _ in range(int(action.get("count", 1))):
        writer.write(record.SerializeToString())
    if action.get("truncate_by"):
      size = os.path.getsize(action["tfrecord"])
      with open(action["tfrecord"], "r+b") as handle:
        handle.truncate(size - int(action["truncate_by"]))
  elif "google_checkpoint" in action:
    from bert import modeling  # pylint: disable=g-import-not-at-top
    from bert.formats import checkpoint_files  # pylint: disable=g-import-not-at-top
    from bert.training import model_config  # pylint: disable=g-import-not-at-top
    config = model_config.load_bert_config(action["bert_config"])
    if action.get("head") == "pretraining":
      from bert import heads  # pylint: disable=g-import-not-at-top
      model, _ = heads.build_pretraining_model(config)
    else:
      model = modeling.BertModel(config)
    checkpoint_files.save_google_checkpoint(model, action["google_checkpoint"])
  elif "foreign_checkpoint" in action:
    from bert import heads  # pylint: disable=g-import-not-at-top
    from bert.training import checkpoints  # pylint: disable=g-import-not-at-top
    from bert.training import model_config  # pylint: disable=g-import-not-at-top
    config = model_config.load_bert_config(action["bert_config"])
    if action.get("head") == "pretraining":
      model, encoder = heads.build_pretraining_model(config)
    else:
      model, encoder = heads.build_classifier_model(config, int(action.get("num_labels", 2)))
    step = tf.Variable(7, dtype=tf.int64)
    signature = tf.Variable(checkpoints.model_signature(model))
    extra = {}
    if "head_info" in action:
      extra["head_info"] = tf.Variable(action["head_info"])
    manager = tf.train.CheckpointManager(
        tf.train.Checkpoint(step=step, model=model, encoder=encoder,
                            model_signature=signature, **extra),
        action["foreign_checkpoint"], max_to_keep=1, checkpoint_name="ckpt")
    manager.save(checkpoint_number=7)
  elif "scalars" in action:  # as the training loop writes them
    from bert.training import loop  # pylint: disable=g-import-not-at-top
    writer = tf.summary.create_file_writer(action["scalars"])
    for step, value in enumerate(action["values"], start=1):
      loop.write_scalars(writer, {action["tag"]: value}, step)
    writer.close()
  elif "copy" in action:
    import shutil  # pylint: disable=g-import-not-at-top
    if not os.path.exists(action["to"]):
      shutil.copytree(action["copy"], action["to"])
  elif "upload" in action:
    from bert.utils import file_io  # pylint: disable=g-import-not-at-top
    from bert.utils import paths  # pylint: disable=g-import-not-at-top
    source, target = action["upload"], action["to"]
    if os.path.isdir(source):
      file_io.copy_tree(source, target)
    else:
      file_io.makedirs(paths.dirname(target))
      file_io.copy(source, target)
  elif "truncate" in action:
    size = os.path.getsize(action["truncate"])
    with open(action["truncate"], "r+b") as handle:
      handle.truncate(size - int(action["by"]))
  else:
    raise ValueError(f"unknown setup action {action}")


def _after(action):
  """What a case's "after" action finds, run in this process once the case is done:
    {"download": URL, "to": DIR}  copies every file under URL (a folder) into DIR and
                                  returns the relative names copied;
    {"list": URL}                 every file under URL, relative to it (a missing
                                  folder: []).
  An in-memory filesystem (ram://) lives in one process only: this is how a test reads
  what a command wrote there."""
  from bert.utils import file_io  # pylint: disable=g-import-not-at-top
  from bert.utils import paths  # pylint: disable=g-import-not-at-top
  url = action.get("download") or action.get("list")
  if not file_io.exists(url):
    return []
  if not file_io.isdir(url):  # one file
    names = [""]
  else:
    names = file_io.walk_files(url)
  if "download" in action:
    for name in names:
      source = paths.join(url, name) if name else url
      target = os.path.join(action["to"], name) if name else action["to"]
      os.makedirs(os.path.dirname(target) or ".", exist_ok=True)
      with open(target, "wb") as handle:
        handle.write(file_io.read_bytes(source))
  return names


def _run_case(app, main, script, argv, uses_absl=True, run_kwargs=None):
  """(exit status, crashed, traceback text) of one `app.run(main, argv, **run_kwargs)`
  (the command's own flags_parser among them) or, for an argparse tool, one
  `main(argv)`."""
  from absl import flags  # pylint: disable=g-import-not-at-top
  flags.FLAGS.unparse_flags()
  # absl refuses a second app.run in one process; reset its "already parsed" latch, and
  # its "initialised" one, so that each case's flags are parsed as a fresh process
  # parses them (--verbosity left unset turns INFO logs on then).
  app._register_and_parse_flags_with_usage.done = False  # pylint: disable=protected-access
  app._run_init.done = False  # pylint: disable=protected-access
  sys.argv = [script] + list(argv)
  try:
    if uses_absl:
      app.run(main, argv=sys.argv, **(run_kwargs or {}))
    else:
      main(list(argv))
  except SystemExit as exc:
    code = exc.code
    if code is None or code is False:
      return 0, False, ""
    return (code if isinstance(code, int) else 1), False, ""
  except BaseException:  # pylint: disable=broad-except
    # What the interpreter would do with an uncaught exception: traceback, status 1.
    return 1, True, traceback.format_exc()
  return 0, False, ""


def _load(script, root):
  """Executes `script` once as this process's program; returns how to run one case:
  (app, main, uses_absl, every flag the script defines, app.run's keyword arguments:
  the command's flags_parser)."""
  # The scripts filter TensorFlow's runtime log through a pipe to the stderr they start
  # with (runtime_log.py); here every case redirects fd 2 itself, so keep it unfiltered.
  os.environ["BERT_RUNTIME_LOG"] = "1"

  from absl import app  # pylint: disable=g-import-not-at-top
  captured = {}
  real_run = app.run

  def capture(main_fn, *args, **kwargs):
    del args
    captured["main"] = main_fn
    captured["kwargs"] = kwargs  # flags_parser: the command's parse, errors in our form

  # The script becomes this process's real __main__ (not runpy's temporary one), so that
  # multiprocessing's spawn can find its worker functions by `__main__.<name>`.
  path = os.path.join(root, script)
  with open(path, encoding="utf-8") as handle:
    source = handle.read()
  # Every command runs under absl (a root script through bert/cli/launch.py); a tool
  # does when it starts through launch.entry_point or app.run itself.
  uses_absl = not script.startswith("tools/") or re.search(
      r"\b(app\.run|launch\.entry_point)\(", source) is not None
  module = types.ModuleType("__main__" if uses_absl else "harnessed_tool")
  module.__file__ = path
  if uses_absl:
    sys.modules["__main__"] = module
  app.run = capture
  try:
    exec(compile(source, path, "exec"), module.__dict__)  # noqa: S102 our own script
  finally:
    app.run = real_run
  main_fn = captured["main"] if uses_absl else module.main
  from absl import flags  # pylint: disable=g-import-not-at-top
  defined = sorted(flags.FLAGS) if uses_absl else []  # what the tool's messages may name
  return app, main_fn, uses_absl, defined, captured.get("kwargs")


def _run_one(loaded, script, case, root, out, err):
  """Runs one case (its setup, the command line with fds 1 and 2 on the binary files
  `out` and `err`, its after actions); returns its result."""
  app, main_fn, uses_absl, defined, run_kwargs = loaded
  for action in case.get("setup", []):
    _setup(action)
  if "keras" in sys.modules:
    # What a fresh process starts with: no layers named yet, no graphs of earlier cases.
    sys.modules["keras"].backend.clear_session()
  saved_fds = os.dup(1), os.dup(2)
  sys.stdout.flush()
  sys.stderr.flush()
  os.dup2(out.fileno(), 1)
  os.dup2(err.fileno(), 2)
  start = time.time()
  saved_env = {name: os.environ.get(name) for name in case.get("env", {})}
  os.environ.update(case.get("env", {}))
  try:
    os.chdir(case.get("cwd") or root)
    code, crashed, trace = _run_case(app, main_fn, script, case["argv"], uses_absl,
                                     run_kwargs)
  finally:
    os.chdir(root)
    for name, value in saved_env.items():
      if value is None:
        os.environ.pop(name, None)
      else:
        os.environ[name] = value
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(saved_fds[0], 1)
    os.dup2(saved_fds[1], 2)
    os.close(saved_fds[0])
    os.close(saved_fds[1])
  seconds = time.time() - start
  out.seek(0)
  err.seek(0)
  return {"exit": code, "crashed": crashed, "seconds": round(seconds, 2), "flags": defined,
          "stdout": out.read().decode("utf-8", "replace"),
          "stderr": err.read().decode("utf-8", "replace") + trace,
          "after": [_after(action) for action in case.get("after", [])]}


def _serve(script, root):
  """One case per line on stdin (a case of CASES.json, with "stdout" and "stderr": the
  files its output goes to), one line of result per case on stdout, until stdin closes.
  Between cases, fds 1 and 2 are this process's stderr (the client's log of it)."""
  requests = os.fdopen(os.dup(0), "r", encoding="utf-8")
  answers = os.fdopen(os.dup(1), "w", encoding="utf-8")
  null = os.open(os.devnull, os.O_RDONLY)
  os.dup2(null, 0)
  os.close(null)
  os.dup2(2, 1)
  loaded = _load(script, root)
  answers.write(json.dumps({"ready": script}) + "\n")
  answers.flush()
  for line in requests:
    case = json.loads(line)
    with open(case["stdout"], "w+b") as out, open(case["stderr"], "w+b") as err:
      result = _run_one(loaded, script, case, root, out, err)
    answers.write(json.dumps(result) + "\n")
    answers.flush()


# --------------------------------------------------------------------------- the client
# A test's command line through a process kept warm: `run(script, args)` answers as
# `subprocess.run([python, script, *args], capture_output=True, text=True)` does, with
# what the real command-line path gives (exit status, stdout, stderr, files), without a
# TensorFlow start-up per command line. Each script has its own process (`python
# cli_harness.py --serve SCRIPT`), started at its first command line and kept for the next
# ones, at most WARM_LIMIT at a time in a test process (the least recently used goes);
# tests/conftest.py closes them after each test file (`close_all`), so that no state of
# one file's runs reaches another's and each holds its memory for one file only.
# What only a real process shows (kill -9, signals, locks between processes, what
# TensorFlow prints as it starts, the interpreter's own exit) stays a subprocess.

WARM_LIMIT = 2
# Read once, when TensorFlow starts: a command line that sets one of these gets a process
# started with it.
STARTUP_ENV = ("TF_ENABLE_ONEDNN_OPTS", "TF_CPP_MIN_LOG_LEVEL", "TF_NUM_INTEROP_THREADS",
               "TF_NUM_INTRAOP_THREADS", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS",
               "PYTHONPATH", "BERT_KEEP_FREED_MEMORY")
_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_warm = {}  # (script, startup env) -> _Server, least recently used first


class _Server:
  """One script's process: cases in on its stdin, results out on its stdout."""

  def __init__(self, script, startup_env):
    import subprocess  # pylint: disable=g-import-not-at-top
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", **dict(startup_env))
    self.log = tempfile.TemporaryFile()  # what it prints between cases
    self.process = subprocess.Popen(
        [sys.executable, os.path.abspath(__file__), "--serve", script], cwd=_ROOT, env=env,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log)
    self.pending = b""
    self.ready = False

  def _line(self, deadline):
    """The next line of its stdout, or None when it ended; TimeoutError past deadline."""
    import select  # pylint: disable=g-import-not-at-top
    fd = self.process.stdout.fileno()
    while b"\n" not in self.pending:
      left = deadline - time.time()
      if left <= 0:
        raise TimeoutError
      readable, _, _ = select.select([fd], [], [], left)
      if readable:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
          return None
        self.pending += chunk
    line, _, self.pending = self.pending.partition(b"\n")
    return json.loads(line)

  def call(self, case, deadline):
    """The case's result, or None when the process ended during it."""
    if not self.ready:
      if self._line(deadline) is None:
        return None
      self.ready = True
    try:
      self.process.stdin.write((json.dumps(case) + "\n").encode("utf-8"))
      self.process.stdin.flush()
    except BrokenPipeError:
      return None
    return self._line(deadline)

  def log_text(self):
    self.log.seek(0)
    return self.log.read().decode("utf-8", "replace")

  def close(self, kill=False):
    if self.process.poll() is None:
      if not kill:
        try:
          self.process.stdin.close()
          self.process.wait(timeout=30)
        except Exception:  # pylint: disable=broad-except
          kill = True
      if kill:
        self.process.kill()
        self.process.wait()
    self.log.close()


def close_all():
  """Ends every warm process of this test process."""
  while _warm:
    _warm.pop(next(iter(_warm))).close()


def _server(script, startup_env):
  key = (script, startup_env)
  server = _warm.pop(key, None)
  if server is None:
    while len(_warm) >= WARM_LIMIT:
      _warm.pop(next(iter(_warm))).close()
    if not _warm:
      import atexit  # pylint: disable=g-import-not-at-top
      atexit.unregister(close_all)
      atexit.register(close_all)
    server = _Server(script, startup_env)
  _warm[key] = server  # now the most recently used
  return server


def run_case(script, case, timeout=600):
  """Runs one case ({"argv": [...], and "setup", "after", "cwd", "env" as in CASES.json)
  in `script`'s warm process; returns its result (as in RESULTS.json). When the process
  ends during the case (a crash, os._exit), "exit" is its exit status and "crashed" true,
  and the next case gets a new process."""
  import subprocess  # pylint: disable=g-import-not-at-top
  env = dict(case.get("env") or {})
  startup_env = tuple(sorted((k, env.pop(k)) for k in list(env) if k in STARTUP_ENV))
  server = _server(script, startup_env)
  with tempfile.TemporaryDirectory() as folder:
    request = dict(case, env=env, stdout=os.path.join(folder, "stdout"),
                   stderr=os.path.join(folder, "stderr"))
    try:
      result = server.call(request, time.time() + timeout)
    except TimeoutError:
      _warm.pop((script, startup_env)).close(kill=True)
      raise subprocess.TimeoutExpired([script, *case["argv"]], timeout) from None
    if result is None:  # the process ended: what it left is the case's outcome
      _warm.pop((script, startup_env), None)
      code = server.process.wait()
      log = server.log_text()
      server.close()
      texts = []
      for name in ("stdout", "stderr"):
        path = request[name]
        texts.append(open(path, encoding="utf-8", errors="replace").read()
                     if os.path.exists(path) else "")
      result = {"exit": code, "crashed": True, "seconds": None, "flags": [],
                "stdout": texts[0], "stderr": texts[1] or log, "after": []}
  return result


def run(script, args, cwd=None, env=None, timeout=600):
  """`python script args` (a root script, or "tools/<name>.py"), answered by its warm
  process: a subprocess.CompletedProcess (text stdout and stderr). env: the whole
  environment a subprocess would get (os.environ with changes); only the changes travel,
  and a variable removed from os.environ is refused (a real process can drop it)."""
  import subprocess  # pylint: disable=g-import-not-at-top
  script = os.path.relpath(os.path.abspath(os.path.join(_ROOT, script)), _ROOT)
  changes = {}
  if env is not None:
    removed = sorted(set(os.environ) - set(env))
    if removed:
      raise ValueError(f"cli_harness.run cannot remove {removed} from the environment")
    changes = {k: v for k, v in env.items() if os.environ.get(k) != v}
  result = run_case(script, {"argv": [str(a) for a in args], "cwd": cwd and str(cwd),
                             "env": changes}, timeout)
  return subprocess.CompletedProcess([sys.executable, os.path.join(_ROOT, script),
                                      *map(str, args)], result["exit"], result["stdout"],
                                     result["stderr"])


def main():
  root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
  sys.path.insert(0, root)
  os.chdir(root)
  if sys.argv[1] == "--serve":
    _serve(sys.argv[2], root)
    return
  script, cases_file, results_file = sys.argv[1:4]
  with open(cases_file, encoding="utf-8") as handle:
    cases = json.load(handle)
  loaded = _load(script, root)
  results = {}
  for case in cases:
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
      results[case["id"]] = _run_one(loaded, script, case, root, out, err)
  with open(results_file, "w", encoding="utf-8") as handle:
    json.dump(results, handle, indent=1)


if __name__ == "__main__":
  main()
