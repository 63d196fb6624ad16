"""What runs fastest on this CPU: XLA or not, and the precision `--dtype=auto` means.

The scripts' `--enable_xla` left unset and `--dtype=auto` ask this module; a flag given
on the command line wins. The choice comes from a table of measured CPUs (`TABLE`, one
row per CPU class, a choice per phase with the measurement it rests on; docs/cpu.md has
the figures); a CPU not in the table gets the original's behaviour (XLA off, float32),
logged as not measured. `choose` returns the choice and the one log line that names the
CPU, what was picked, why, and whether TensorFlow's oneDNN is on.

It needs no TensorFlow, so a script can ask it before TensorFlow loads (oneDNN's
setting, for one, is read by TensorFlow once, when it starts).
"""

import dataclasses
import glob
import os

PHASES = ("pretraining", "fine-tuning", "prediction")
# What --dtype=auto may pick. Never float16: it needs loss scaling, and no CPU here has
# float16 matrix units that would pay for its narrower range.
AUTO_DTYPES = ("float32", "bfloat16")
# --dtype's value that asks the table.
AUTO = "auto"
CPUINFO = "/proc/cpuinfo"

# /proc/cpuinfo flag -> the unit's name in the log line and docs, in this order.
_UNITS = (("avx2", "AVX2"), ("avx512f", "AVX-512"), ("avx512_bf16", "AVX512-BF16"),
          ("amx_bf16", "AMX-BF16"))
UNIT_NAMES = dict(_UNITS)
# TensorFlow's oneDNN is on by default on Linux x86 when the CPU has one of these
# (tensorflow/core/util/port.cc, DefaultOneDnnPolicy); TF_ENABLE_ONEDNN_OPTS overrides.
_ONEDNN_DEFAULT_FLAGS = ("avx512_vnni", "avx512_bf16", "avx_vnni", "amx_tile", "amx_int8",
                         "amx_bf16")


@dataclasses.dataclass(frozen=True)
class Cpu:
  """A CPU as /proc/cpuinfo describes its first processor (None/empty where it says nothing)."""
  vendor: str = ""             # vendor_id: "AuthenticAMD", "GenuineIntel"
  family: int = None           # cpu family
  model: int = None            # model
  model_name: str = ""         # "AMD EPYC 9B45"
  flags: frozenset = frozenset()

  @property
  def units(self):
    """The vector and matrix units that matter here, e.g. ("AVX2", "AVX-512")."""
    return tuple(name for flag, name in _UNITS if flag in self.flags)

  @property
  def has_bfloat16(self):
    """Whether the CPU computes bfloat16 products in hardware (AVX512-BF16 or AMX)."""
    return "avx512_bf16" in self.flags or "amx_bf16" in self.flags

  def describe(self):
    """'AMD EPYC (AuthenticAMD family 26 model 2; AVX2 AVX-512 AVX512-BF16)'."""
    units = " ".join(self.units) or "no AVX2"
    return (f"{self.model_name or 'unknown CPU'} ({self.vendor or 'unknown vendor'} "
            f"family {_text(self.family)} model {_text(self.model)}; {units})")


def _text(value):
  return "?" if value is None else str(value)


def parse_cpuinfo(text):
  """Cpu from the text of /proc/cpuinfo (its first processor's block)."""
  fields = {}
  for line in text.splitlines():
    if not line.strip():
      if fields:
        break  # the first processor's block ends at the first blank line
      continue
    key, _, value = line.partition(":")
    fields.setdefault(key.strip(), value.strip())

  def number(key):
    try:
      return int(fields[key])
    except (KeyError, ValueError):
      return None

  return Cpu(vendor=fields.get("vendor_id", ""), family=number("cpu family"),
             model=number("model"), model_name=fields.get("model name", ""),
             flags=frozenset(fields.get("flags", "").split()))


def this_cpu(path=CPUINFO):
  """This machine's Cpu; an empty Cpu where /proc/cpuinfo cannot be read (not Linux)."""
  try:
    with open(path, encoding="utf-8", errors="replace") as handle:
      return parse_cpuinfo(handle.read())
  except OSError:
    return Cpu()


def onednn_state(cpu, environ=None):
  """(on, why): whether TensorFlow's oneDNN operations are on, read without TensorFlow.

  TF_ENABLE_ONEDNN_OPTS decides when it is 0/1/true/false (any case); else TensorFlow's
  default on Linux x86: on for CPUs with AVX512-VNNI, AVX512-BF16, AVX-VNNI or AMX.
  """
  environ = os.environ if environ is None else environ
  value = environ.get("TF_ENABLE_ONEDNN_OPTS")
  if value is not None and value.strip().lower() in ("0", "false", "1", "true"):
    return value.strip().lower() in ("1", "true"), f"TF_ENABLE_ONEDNN_OPTS={value}"
  on = any(flag in cpu.flags for flag in _ONEDNN_DEFAULT_FLAGS)
  return on, "TensorFlow's default for this CPU"


@dataclasses.dataclass(frozen=True)
class Pick:
  """One cell of the table: XLA for the training step, the precision, and the evidence.
  bfloat16_slower: bfloat16 was measured and found no faster here (a --dtype=bfloat16
  given is still honoured, and the start-up line says what was measured)."""
  enable_xla: bool
  dtype: str
  evidence: str
  bfloat16_slower: bool = False


@dataclasses.dataclass(frozen=True)
class Row:
  """A measured CPU class: which CPUs it covers and its pick for each phase.

  A family and model do not tell a CPU's units (the same Xeon model shows AMX in one
  virtual machine and not in another), so a row also states the units it was measured
  with (`units`, /proc/cpuinfo flags) and those it was measured without (`lacks`): it
  covers a CPU of its vendor, family and model that has each of the first and none of
  the second."""
  name: str
  vendor: str
  family: int
  model: int
  picks: dict  # phase -> Pick
  units: tuple = ()  # /proc/cpuinfo flags the measured CPU had: "avx512f", "amx_bf16"
  lacks: tuple = ()  # flags it did not have

  def same_model(self, cpu):
    return (cpu.vendor, cpu.family, cpu.model) == (self.vendor, self.family, self.model)

  def matches(self, cpu):
    return (self.same_model(cpu) and all(flag in cpu.flags for flag in self.units)
            and not any(flag in cpu.flags for flag in self.lacks))

  def mismatch(self, cpu):
    """Why a CPU of this row's model is not covered: 'it lacks AMX-BF16', or ''."""
    missing = [UNIT_NAMES.get(flag, flag) for flag in self.units if flag not in cpu.flags]
    extra = [UNIT_NAMES.get(flag, flag) for flag in self.lacks if flag in cpu.flags]
    parts = ([f"it lacks {', '.join(missing)}"] if missing else []) + (
        [f"it has {', '.join(extra)}, which the measured CPU had not"] if extra else [])
    return "; ".join(parts)


# Every figure: 2 cores. docs/cpu.md has the whole measurements and their commands.
_NO_XLA_IN_PREDICTION = "prediction is not compiled with XLA"
TABLE = (
    Row("AMD Zen 5 (EPYC family 26 model 2: AVX-512, AVX512-BF16, no AMX)",
        "AuthenticAMD", 26, 2, units=("avx512f", "avx512_bf16"), lacks=("amx_bf16",),
        picks={
            "pretraining": Pick(False, "float32",
                "measured 2026-11-26 on an idle machine, reproduce/korean.sh's step (L=4 "
                "H=128, seq 64): batch 32 float32 331 sequences/s with XLA off, 325 on; "
                "batch 64 362 / 335; bfloat16 (batch 64) 320 / 298, not faster",
                bfloat16_slower=True),
            "fine-tuning": Pick(False, "bfloat16",
                "measured 2026-12-02 on an idle machine: run_classifier.py SST-2 from "
                "MiniLM, 50 steps of 32 after 10, bfloat16 1.15x float32 (1.13-1.16 over "
                "3 rounds; 1.05x the whole process); SST-2 dev accuracy after 200 steps "
                "0.8200 against 0.8188; XLA off: XLA:CPU runs bfloat16 matmuls in float32"),
            "prediction": Pick(False, "bfloat16",
                "measured 2026-12-02 on an idle machine: run_classifier.py --do_predict, "
                "5,000 SST-2 sentences, batch 32, bfloat16 1.36x float32 in the model's "
                "share (1.18-1.84 over 5 rounds; 1.16x the whole process); the same class "
                "on 4,992 of 5,000; " + _NO_XLA_IN_PREDICTION),
        }),
    Row("AMD Zen 4 (EPYC family 25 model 17: AVX-512, AVX512-BF16, no AMX)",
        "AuthenticAMD", 25, 17, units=("avx512f", "avx512_bf16"), lacks=("amx_bf16",),
        picks={
            "pretraining": Pick(False, "float32",
                "measured 2026-12-02 on an idle machine: run_pretraining.py, L4 H256, seq "
                "128, batch 16, bfloat16 1.22x float32 (40 steps after 10; 1.14x the "
                "whole process), but pretraining's accuracy in bfloat16 is not measured "
                "here: float32 until it is; XLA not measured"),
            "fine-tuning": Pick(False, "bfloat16",
                "measured 2026-12-02 on an idle machine: run_classifier.py SST-2 from "
                "MiniLM, 50 steps of 32 after 10, bfloat16 1.26x float32 (1.24-1.30 over "
                "3 rounds; 1.13x the whole process); SST-2 and MRPC dev accuracy within "
                "1 point of float32's; XLA off: XLA:CPU runs bfloat16 matmuls in float32"),
            "prediction": Pick(False, "bfloat16",
                "measured 2026-12-02 on an idle machine: run_classifier.py --do_predict, "
                "5,000 SST-2 sentences, batch 32, bfloat16 1.28x float32 in the model's "
                "share (1.17x the whole process); the same class on 4,999 of 5,000; "
                + _NO_XLA_IN_PREDICTION),
        }),
    Row("Intel Xeon family 6 model 207 (AVX-512, AVX512-BF16, AMX)",
        "GenuineIntel", 6, 207, units=("avx512f", "avx512_bf16", "amx_bf16"), picks={
            "pretraining": Pick(True, "float32",
                "measured, reproduce/korean.sh's step, oneDNN on: float32 179 ms a step "
                "with XLA on, 366 off; bfloat16 200 with XLA, 224 without"),
            "fine-tuning": Pick(False, "float32",
                "measured: SST-2 fine-tuning with bfloat16 about as fast as float32 "
                "(137 examples/s); XLA not measured for fine-tuning"),
            "prediction": Pick(False, "float32",
                "measured: bfloat16 whole-process prediction 1.05x / 1.00x float32, not "
                "worth leaving float32's numerics; " + _NO_XLA_IN_PREDICTION),
        }),
    Row("Intel Xeon family 6 model 207 (AVX-512, AVX512-BF16, no AMX)",
        "GenuineIntel", 6, 207, units=("avx512f", "avx512_bf16"), lacks=("amx_bf16",),
        picks={
            "pretraining": Pick(False, "float32",
                "not measured on this CPU kind (the AMX row's XLA was measured with AMX): "
                "the original's XLA off and float32"),
            "fine-tuning": Pick(False, "float32",
                "measured on a quiet machine: run_classifier.py SST-2 from MiniLM, 50 "
                "steps, bfloat16 1.00x float32, not worth leaving float32's numerics; "
                "without AMX oneDNN's bfloat16 matmul runs at 0.58x float32's; XLA not "
                "measured for fine-tuning", bfloat16_slower=True),
            "prediction": Pick(False, "float32",
                "measured on a quiet machine: run_classifier.py --do_predict, 5,000 SST-2 "
                "sentences from MiniLM, bfloat16 0.63x float32 in the model's share "
                "(0.74x the whole process): without AMX oneDNN's bfloat16 matmul runs at "
                "0.58x float32's; " + _NO_XLA_IN_PREDICTION, bfloat16_slower=True),
        }),
    Row("AMD Zen 3 (EPYC family 25 model 1: AVX2, no AVX-512, no bfloat16 units)",
        "AuthenticAMD", 25, 1, units=("avx2",),
        lacks=("avx512f", "avx512_bf16", "amx_bf16"), picks={
            "pretraining": Pick(True, "float32",
                "measured 2026-11-26, run_pretraining.py at the Korean shape: XLA 1.10x "
                "(70.4 against 64.3 sequences/s); no bfloat16 units"),
            "fine-tuning": Pick(False, "float32",
                "measured 2026-11-25: at the MiniLM's fine-tuning shapes XLA's matmuls are "
                "slower than the default kernels (251 against 206 ms); no bfloat16 units"),
            "prediction": Pick(False, "float32",
                "no bfloat16 units; " + _NO_XLA_IN_PREDICTION),
        }),
)
UNMEASURED = Pick(False, "float32", "not measured: the original's XLA off and float32")
for _row in TABLE:
  assert set(_row.picks) == set(PHASES), _row.name
  assert all(p.dtype in AUTO_DTYPES for p in _row.picks.values()), _row.name
  assert not any(p.dtype == "bfloat16" and p.enable_xla for p in _row.picks.values()), (
      _row.name)

# Why XLA and bfloat16 do not go together on a CPU: TensorFlow 2.21's XLA:CPU has no
# bfloat16 matmul (the wheel's oneDNN lacks the mode XLA's rewrite needs), so it turns
# each bfloat16 dot into convert -> float32 dot -> convert.
XLA_BFLOAT16_COST = ("XLA:CPU computes bfloat16 matmuls in float32 (convert, float32 dot, "
                     "convert), slower than bfloat16 without XLA")


def table_pick(cpu, phase):
  """(row name or None, Pick) for this CPU and phase; UNMEASURED for a CPU not in TABLE."""
  if phase not in PHASES:
    raise ValueError(f"phase {phase!r}: one of {PHASES}")
  for row in TABLE:
    if row.matches(cpu):
      pick = row.picks[phase]
      if pick.dtype == "bfloat16" and not cpu.has_bfloat16:
        # A row never covers CPUs without the units, but a wrong cpuinfo must not
        # make bfloat16 the slow emulated path.
        pick = dataclasses.replace(pick, dtype="float32",
                                   evidence=pick.evidence + "; no bfloat16 units here")
      return row.name, pick
  # A row of this model measured with other units says nothing about this CPU.
  near = [f"table row '{row.name}' does not apply, {row.mismatch(cpu)}"
          for row in TABLE if row.same_model(cpu)]
  if near:
    return None, dataclasses.replace(
        UNMEASURED, evidence=f"{'; '.join(near)}; {UNMEASURED.evidence}")
  return None, UNMEASURED


def accelerator_visible(environ=None, dev="/dev"):
  """Whether this machine shows TensorFlow a GPU or a TPU, read from device files without
  TensorFlow: an NVIDIA GPU's /dev/nvidiaN (unless CUDA_VISIBLE_DEVICES hides every GPU),
  a TPU VM's chips as /dev/accelN (TPU v4 and later) or VFIO groups /dev/vfio/N (v2, v3).

  The package's one device check: the table's choice (CPU runs only) and the default of
  op determinism (on where only a CPU computes) ask it."""
  environ = os.environ if environ is None else environ
  gpus = environ.get("CUDA_VISIBLE_DEVICES", None) not in ("", "-1") and glob.glob(
      os.path.join(dev, "nvidia[0-9]*"))
  tpus = glob.glob(os.path.join(dev, "accel[0-9]*")) or glob.glob(
      os.path.join(dev, "vfio", "[0-9]*"))
  return bool(gpus or tpus)


def with_update(line, compiled, why):
  """A Choice's line with what runs the optimizer's update, after the model's XLA and
  precision (the update may be compiled with XLA where the model's step is not):
  `...; fine-tuning: XLA off (table), float32 (table); the optimizer's update: XLA on
  (why); oneDNN ...`."""
  return line.replace("; oneDNN ", f"; the optimizer's update: XLA {'on' if compiled else 'off'}"
                      f" ({why}); oneDNN ", 1)


@dataclasses.dataclass(frozen=True)
class Choice:
  """What a run uses: enable_xla, dtype, and the log line that says why."""
  enable_xla: bool
  dtype: str
  line: str


def choose(cpu, phase, dtype, enable_xla=None, environ=None,
           table_applies=True, not_applies_reason="", on_cpu=True, auto_dtype_override=None):
  """The run's XLA and precision: the flags where given, else the table's for cpu and phase.

  dtype: the --dtype flag (AUTO asks the table; float32/bfloat16/float16 are kept).
  enable_xla: the --enable_xla flag (None, unset, asks the table).
  table_applies=False (a TPU, a GPU, several devices): what is not given is the
  original's (XLA off, float32); not_applies_reason says why in the log line.
  on_cpu: the run computes on this CPU (no GPU or TPU): bfloat16 then leaves XLA off
  unless --enable_xla asks for it, and the line says what asking costs.
  auto_dtype_override: (dtype, reason) that --dtype=auto must take whatever the table
  says (an export's LiteRT models convert only from float32); the headline gives the
  precision the run uses and this reason for it.
  The line's headline is what the run uses: XLA and the precision, each with its reason.
  """
  row, pick = table_pick(cpu, phase)
  if not table_applies:
    row, pick = None, Pick(False, "float32",
                           f"{not_applies_reason}; the original's XLA off and float32")
  xla_why = "flag" if enable_xla is not None else "table"
  xla = pick.enable_xla if enable_xla is None else bool(enable_xla)
  dtype_why = "table" if dtype == AUTO else "flag"
  dtype = pick.dtype if dtype == "auto" else dtype
  if auto_dtype_override and dtype_why == "table" and auto_dtype_override[0] != dtype:
    dtype, dtype_why = auto_dtype_override[0], (
        f"{auto_dtype_override[1]}; the table's {dtype} otherwise")
  cost = ""
  if on_cpu and dtype == "bfloat16" and xla:
    if enable_xla is None:  # the table's XLA is for its own precision, never bfloat16
      xla, xla_why = False, "bfloat16 on a CPU"
    else:
      cost = f" --enable_xla with bfloat16 costs time here: {XLA_BFLOAT16_COST}."
  if dtype_why == "flag" and dtype == "bfloat16" and row and pick.bfloat16_slower:
    cost += (f" --dtype=bfloat16 is honoured, though bfloat16 was measured no faster for "
             f"{phase} on this CPU kind (table row '{row}': {pick.evidence}).")
  onednn, onednn_why = onednn_state(cpu, environ)
  used = [w for w in (xla_why, dtype_why) if w == "table" or "the table's" in w]
  why = (f"table row '{row}' for {phase}: {pick.evidence}" if row
         else f"{phase}: {pick.evidence}") if used else "flags"
  if xla_why == "bfloat16 on a CPU":
    why += f"; XLA off because {XLA_BFLOAT16_COST}"
  line = (f"CPU: {cpu.describe()}; {phase}: XLA {'on' if xla else 'off'} ({xla_why}), "
          f"{dtype} ({dtype_why}); oneDNN {'on' if onednn else 'off'} ({onednn_why}).{cost} "
          f"Why: {why}")
  return Choice(enable_xla=xla, dtype=dtype, line=line)
