"""cpu_choice: the CPU from /proc/cpuinfo text, the table's choice of XLA and precision
for each measured CPU class and phase (docs/cpu.md), the flags winning over it, and the
log line; flags_common.options_from_flags resolving --enable_xla unset and --dtype=auto,
and settings_from_flags, its step for any settings class."""

import dataclasses
import os
import subprocess
import sys

import pytest
from absl import flags

from bert.cli import flags_common
from bert.training import run_options
from bert.utils import cpu_choice
from bert.utils import errors

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _cpuinfo(vendor, family, model, name, flags_text):
  block = (f"processor\t: {{n}}\nvendor_id\t: {vendor}\ncpu family\t: {family}\n"
           f"model\t\t: {model}\nmodel name\t: {name}\nstepping\t: 1\n"
           f"flags\t\t: fpu sse sse2 {flags_text}\n\n")
  # Two processors: only the first block counts.
  return block.format(n=0) + block.format(n=1).replace(name, "other")


ZEN5 = _cpuinfo("AuthenticAMD", 26, 2, "AMD EPYC 9B45",
                "avx avx2 avx512f avx512bw avx_vnni avx512_bf16 avx512_vnni")
XEON = _cpuinfo("GenuineIntel", 6, 207, "INTEL(R) XEON(R) PLATINUM 8581C CPU @ 2.10GHz",
                "avx avx2 avx512f avx512_vnni avx512_bf16 amx_bf16 amx_tile amx_int8")
ZEN3 = _cpuinfo("AuthenticAMD", 25, 1, "AMD EPYC 7B13", "avx avx2 fma")
ZEN4 = _cpuinfo("AuthenticAMD", 25, 17, "AMD EPYC",
                "avx avx2 avx512f avx512bw avx512_bf16 avx512_vnni")
# The same Xeon model in a virtual machine that exposes AVX512-BF16 but no AMX (this
# project's test machine), and one that exposes neither (bfloat16 emulated).
XEON_NO_AMX = _cpuinfo("GenuineIntel", 6, 207, "Intel(R) Xeon(R) Processor",
                       "avx avx2 avx512f avx512bw avx512_vnni avx512_bf16 avx512_fp16")
XEON_NO_BF16 = _cpuinfo("GenuineIntel", 6, 207, "Intel(R) Xeon(R) Processor",
                        "avx avx2 avx512f avx512bw avx512_vnni")
# An unmeasured CPU that has bfloat16 units: the table has no row, so float32.
UNKNOWN = _cpuinfo("GenuineIntel", 6, 143, "Intel(R) Xeon(R) Platinum 8488C",
                   "avx avx2 avx512f avx512_bf16 amx_bf16 amx_tile")

# (cpuinfo, phase) -> (enable_xla, dtype) as docs/cpu.md's table says.
EXPECTED = {
    (ZEN5, "pretraining"): (False, "float32"),
    (ZEN5, "fine-tuning"): (False, "bfloat16"),
    (ZEN5, "prediction"): (False, "bfloat16"),
    (XEON, "pretraining"): (True, "float32"),
    (XEON, "fine-tuning"): (False, "float32"),
    (XEON, "prediction"): (False, "float32"),
    (ZEN4, "pretraining"): (False, "float32"),
    (ZEN4, "fine-tuning"): (False, "bfloat16"),
    (ZEN4, "prediction"): (False, "bfloat16"),
    (ZEN3, "pretraining"): (True, "float32"),
    (ZEN3, "fine-tuning"): (False, "float32"),
    (ZEN3, "prediction"): (False, "float32"),
    (XEON_NO_AMX, "pretraining"): (False, "float32"),
    (XEON_NO_AMX, "fine-tuning"): (False, "float32"),
    (XEON_NO_AMX, "prediction"): (False, "float32"),
    (XEON_NO_BF16, "pretraining"): (False, "float32"),
    (XEON_NO_BF16, "fine-tuning"): (False, "float32"),
    (XEON_NO_BF16, "prediction"): (False, "float32"),
    (UNKNOWN, "pretraining"): (False, "float32"),
    (UNKNOWN, "fine-tuning"): (False, "float32"),
    (UNKNOWN, "prediction"): (False, "float32"),
}
ROWS = {ZEN5: "AMD Zen 5", XEON: "Intel Xeon family 6 model 207", ZEN3: "AMD Zen 3",
        ZEN4: "AMD Zen 4",
        XEON_NO_AMX: "Intel Xeon family 6 model 207 (AVX-512, AVX512-BF16, no AMX)",
        XEON_NO_BF16: None, UNKNOWN: None}


def test_parse_cpuinfo_reads_the_first_processor():
  cpu = cpu_choice.parse_cpuinfo(ZEN5)
  assert (cpu.vendor, cpu.family, cpu.model, cpu.model_name) == (
      "AuthenticAMD", 26, 2, "AMD EPYC 9B45")
  assert cpu.units == ("AVX2", "AVX-512", "AVX512-BF16") and cpu.has_bfloat16
  assert cpu_choice.parse_cpuinfo(XEON).units == ("AVX2", "AVX-512", "AVX512-BF16",
                                                 "AMX-BF16")
  zen3 = cpu_choice.parse_cpuinfo(ZEN3)
  assert zen3.units == ("AVX2",) and not zen3.has_bfloat16
  assert zen3.describe() == "AMD EPYC 7B13 (AuthenticAMD family 25 model 1; AVX2)"
  # Not Linux, or an ARM cpuinfo without these fields: nothing guessed.
  empty = cpu_choice.parse_cpuinfo("processor : 0\nBogoMIPS : 50.00\n")
  assert (empty.vendor, empty.family, empty.model, empty.units) == ("", None, None, ())
  assert empty.describe() == "unknown CPU (unknown vendor family ? model ?; no AVX2)"
  assert cpu_choice.this_cpu("/nonexistent/cpuinfo") == cpu_choice.Cpu()


@pytest.mark.parametrize("cpuinfo,phase", sorted(EXPECTED, key=lambda k: (ROWS[k[0]] or "~", k[1])))
def test_each_cpu_class_gets_the_documented_choice(cpuinfo, phase):
  cpu = cpu_choice.parse_cpuinfo(cpuinfo)
  row, pick = cpu_choice.table_pick(cpu, phase)
  assert (row is None) == (ROWS[cpuinfo] is None)
  if row is not None:
    assert row.startswith(ROWS[cpuinfo])
  choice = cpu_choice.choose(cpu, phase, dtype="auto", enable_xla=None, environ={})
  assert (choice.enable_xla, choice.dtype) == EXPECTED[cpuinfo, phase]
  assert (pick.enable_xla, pick.dtype) == EXPECTED[cpuinfo, phase]
  if row is None:
    assert "not measured" in choice.line


def test_flags_win_over_the_table():
  xeon = cpu_choice.parse_cpuinfo(XEON)
  choice = cpu_choice.choose(xeon, "pretraining", dtype="bfloat16", enable_xla=False,
                             environ={})
  assert (choice.enable_xla, choice.dtype) == (False, "bfloat16")
  assert "XLA off (flag), bfloat16 (flag)" in choice.line and "Why: flags" in choice.line
  zen5 = cpu_choice.parse_cpuinfo(ZEN5)
  choice = cpu_choice.choose(zen5, "pretraining", dtype="float16", enable_xla=True,
                             environ={})
  assert (choice.enable_xla, choice.dtype) == (True, "float16")
  # One from the flag, the other from the table.
  choice = cpu_choice.choose(xeon, "pretraining", dtype="float32", enable_xla=None,
                             environ={})
  assert (choice.enable_xla, choice.dtype) == (True, "float32")
  assert "XLA on (table), float32 (flag)" in choice.line


def test_bfloat16_on_a_cpu_leaves_xla_off_or_says_what_it_costs():
  xeon = cpu_choice.parse_cpuinfo(XEON)
  # The Xeon's pretraining row has XLA on for float32; with bfloat16 the table's XLA is off.
  choice = cpu_choice.choose(xeon, "pretraining", dtype="bfloat16", enable_xla=None,
                             environ={})
  assert (choice.enable_xla, choice.dtype) == (False, "bfloat16")
  assert "XLA off (bfloat16 on a CPU), bfloat16 (flag)" in choice.line
  assert choice.line.endswith("; XLA off because " + cpu_choice.XLA_BFLOAT16_COST)
  # Both asked for: kept, and the line says why it costs.
  choice = cpu_choice.choose(xeon, "pretraining", dtype="bfloat16", enable_xla=True,
                             environ={})
  assert (choice.enable_xla, choice.dtype) == (True, "bfloat16")
  assert ("--enable_xla with bfloat16 costs time here: XLA:CPU computes bfloat16 matmuls "
          "in float32 (convert, float32 dot, convert), slower than bfloat16 without XLA."
          ) in choice.line
  # Not on a CPU (a GPU, a TPU): XLA compiles bfloat16 dots there; nothing changes.
  choice = cpu_choice.choose(xeon, "pretraining", dtype="bfloat16", enable_xla=True,
                             environ={}, on_cpu=False)
  assert choice.enable_xla and "costs time" not in choice.line
  # float32 keeps the table's XLA.
  assert cpu_choice.choose(xeon, "pretraining", dtype="float32", environ={}).enable_xla
  for row in cpu_choice.TABLE:
    for pick in row.picks.values():
      assert not (pick.dtype == "bfloat16" and pick.enable_xla), row.name


def test_auto_never_gives_float16():
  cpus = [cpu_choice.parse_cpuinfo(text) for text in ROWS]
  # Every row's own CPU, and each row's CPU stripped of its bfloat16 units.
  cpus += [cpu_choice.Cpu(c.vendor, c.family, c.model, c.model_name, frozenset())
           for c in cpus]
  seen = set()
  for cpu in cpus:
    for phase in cpu_choice.PHASES:
      for table_applies in (True, False):
        choice = cpu_choice.choose(cpu, phase, dtype="auto", environ={},
                                   table_applies=table_applies, not_applies_reason="x")
        seen.add(choice.dtype)
        assert choice.dtype in ("float32", "bfloat16")
        if choice.dtype == "bfloat16":
          assert cpu.has_bfloat16
  assert seen == {"float32", "bfloat16"}  # the Zen 4 and Zen 5 rows pick bfloat16
  for row in cpu_choice.TABLE:
    assert set(row.picks) == set(cpu_choice.PHASES)
    assert all(p.dtype in cpu_choice.AUTO_DTYPES for p in row.picks.values())


def test_a_row_picking_bfloat16_falls_back_without_the_units(monkeypatch):
  row = cpu_choice.Row("test", "AuthenticAMD", 26, 2, {
      phase: cpu_choice.Pick(False, "bfloat16", "measured") for phase in cpu_choice.PHASES})
  monkeypatch.setattr(cpu_choice, "TABLE", (row,))
  zen5 = cpu_choice.parse_cpuinfo(ZEN5)
  assert cpu_choice.choose(zen5, "prediction", dtype="auto", environ={}).dtype == "bfloat16"
  stripped = cpu_choice.Cpu(zen5.vendor, zen5.family, zen5.model, zen5.model_name,
                            frozenset({"avx2"}))
  choice = cpu_choice.choose(stripped, "prediction", dtype="auto", environ={})
  assert choice.dtype == "float32" and "no bfloat16 units here" in choice.line


def test_onednn_state_follows_tensorflow_s_rule():
  zen5, zen3, xeon = (cpu_choice.parse_cpuinfo(t) for t in (ZEN5, ZEN3, XEON))
  assert cpu_choice.onednn_state(zen5, {}) == (True, "TensorFlow's default for this CPU")
  assert cpu_choice.onednn_state(xeon, {})[0] is True
  assert cpu_choice.onednn_state(zen3, {}) == (False, "TensorFlow's default for this CPU")
  assert cpu_choice.onednn_state(zen5, {"TF_ENABLE_ONEDNN_OPTS": "0"}) == (
      False, "TF_ENABLE_ONEDNN_OPTS=0")
  assert cpu_choice.onednn_state(zen3, {"TF_ENABLE_ONEDNN_OPTS": "True"})[0] is True
  # TensorFlow ignores a value that is not 0/1/true/false and keeps its default.
  assert cpu_choice.onednn_state(zen3, {"TF_ENABLE_ONEDNN_OPTS": "yes"}) == (
      False, "TensorFlow's default for this CPU")


# TensorFlow's own answer, from its small extension module alone (a whole `import
# tensorflow` takes seconds); in a fresh process, because TensorFlow reads the variable once.
_TENSORFLOW_SAYS = """
import glob, importlib.util, os
package = importlib.util.find_spec("tensorflow").submodule_search_locations[0]
path = glob.glob(os.path.join(package, "python", "util", "_pywrap_util_port*.so"))[0]
spec = importlib.util.spec_from_file_location("_pywrap_util_port", path)
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
print(module.IsMklEnabled())
"""


@pytest.mark.parametrize("files,environ,visible", [
    ([], {}, False),
    (["null", "vfio/vfio", "accel"], {}, False),  # VFIO's control file, no group: no TPU
    (["nvidia0", "nvidiactl"], {}, True),
    (["nvidia0"], {"CUDA_VISIBLE_DEVICES": "-1"}, False),
    (["nvidia0"], {"CUDA_VISIBLE_DEVICES": ""}, False),
    (["accel0", "accel1"], {}, True),                   # a TPU v4 or later VM
    (["vfio/vfio", "vfio/0"], {"CUDA_VISIBLE_DEVICES": "-1"}, True),  # a TPU v2/v3 VM
])
def test_accelerator_visible_reads_gpu_and_tpu_device_files(tmp_path, files, environ,
                                                             visible):
  for name in files:
    (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / name).write_text("")
  assert cpu_choice.accelerator_visible(environ, dev=str(tmp_path)) is visible


def test_determinism_defaults_off_where_an_accelerator_is_visible(monkeypatch):
  # The training's default asks the same check (and only it): on a GPU or TPU machine
  # op determinism stays off unless asked for.
  from bert.training import strategies  # pylint: disable=g-import-not-at-top
  monkeypatch.setattr(cpu_choice, "accelerator_visible", lambda: True)
  assert strategies.setup_determinism(7) is False


def test_onednn_state_agrees_with_tensorflow_on_this_machine():
  """Read without TensorFlow, checked against TensorFlow's own answer."""
  for value in (None, "0", "1"):
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    if value is not None:
      env["TF_ENABLE_ONEDNN_OPTS"] = value
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    result = subprocess.run([sys.executable, "-c", _TENSORFLOW_SAYS], env=env,
                            capture_output=True, text=True, check=True, cwd=ROOT)
    expected = cpu_choice.onednn_state(cpu_choice.this_cpu(), env)[0]
    assert result.stdout.strip() == str(expected), value


def test_the_line_says_what_runs_the_optimizers_update():
  line = cpu_choice.choose(cpu_choice.parse_cpuinfo(ZEN5), "fine-tuning", dtype="float32",
                           enable_xla=None, environ={"TF_ENABLE_ONEDNN_OPTS": "0"}).line
  said = cpu_choice.with_update(line, True, "AdamWeightDecay compiles it for models of "
                                "10,000,000 weights and more; this one has 22,713,986")
  assert ("; fine-tuning: XLA off (table), float32 (flag); the optimizer's update: XLA on "
          "(AdamWeightDecay compiles it for models of 10,000,000 weights and more; this "
          "one has 22,713,986); oneDNN off (TF_ENABLE_ONEDNN_OPTS=0). Why: ") in said
  assert said.replace("; the optimizer's update: XLA on (AdamWeightDecay compiles it for "
                      "models of 10,000,000 weights and more; this one has 22,713,986)",
                      "") == line


def test_the_log_line_names_cpu_choice_reason_and_onednn():
  choice = cpu_choice.choose(cpu_choice.parse_cpuinfo(ZEN5), "pretraining", dtype="auto",
                             enable_xla=None, environ={"TF_ENABLE_ONEDNN_OPTS": "0"})
  assert choice.line.startswith(
      "CPU: AMD EPYC 9B45 (AuthenticAMD family 26 model 2; AVX2 AVX-512 AVX512-BF16); "
      "pretraining: XLA off (table), float32 (table); oneDNN off (TF_ENABLE_ONEDNN_OPTS=0). "
      "Why: table row 'AMD Zen 5 (EPYC family 26 model 2: AVX-512, AVX512-BF16, no AMX)' "
      "for pretraining: measured 2026-11-26")
  assert "331 sequences/s with XLA off, 325 on" in choice.line
  unknown = cpu_choice.choose(cpu_choice.parse_cpuinfo(UNKNOWN), "fine-tuning",
                              dtype="auto", environ={})
  assert unknown.line == (
      "CPU: Intel(R) Xeon(R) Platinum 8488C (GenuineIntel family 6 model 143; AVX2 AVX-512 "
      "AVX512-BF16 AMX-BF16); fine-tuning: XLA off (table), float32 (table); oneDNN on "
      "(TensorFlow's default for this CPU). Why: fine-tuning: not measured: the "
      "original's XLA off and float32")
  tpu = cpu_choice.choose(cpu_choice.parse_cpuinfo(XEON), "pretraining", dtype="auto",
                          environ={}, table_applies=False,
                          not_applies_reason="a TPU")
  assert (tpu.enable_xla, tpu.dtype) == (False, "float32")
  assert tpu.line.endswith("Why: pretraining: a TPU; the original's XLA off and float32")


def _flag_values(argv):
  values = flags.FlagValues()
  for name, default, options in (("dtype", "float32", ["float32", "bfloat16", "float16",
                                                       "auto"]),):
    flags.DEFINE_enum(name, default, options, "", flag_values=values)
  flags.DEFINE_bool("enable_xla", None, "", flag_values=values)
  flags.DEFINE_bool("do_train", False, "", flag_values=values)
  flags.DEFINE_string("output_dir", "out", "", flag_values=values)
  flags.DEFINE_enum("distribution_strategy", "one_device", ["one_device", "mirrored"], "",
                    flag_values=values)
  values(["prog"] + argv)
  return values


def test_run_options_resolves_once_from_the_table_or_the_flags(monkeypatch):
  monkeypatch.setattr(cpu_choice, "accelerator_visible", lambda environ=None: False)
  monkeypatch.delenv("BERT_CPU_TABLE", raising=False)  # conftest sets it for scripts
  xeon = cpu_choice.parse_cpuinfo(XEON)
  options = flags_common.options_from_flags(_flag_values([]), phase="pretraining", cpu=xeon)
  assert (options.enable_xla, options.dtype) == (True, "float32")
  assert "pretraining: XLA on (table), float32 (flag)" in options.speed_choice
  options = flags_common.options_from_flags(_flag_values(["--noenable_xla", "--dtype=auto"]),
                                     phase="pretraining", cpu=xeon)
  assert (options.enable_xla, options.dtype) == (False, "float32")
  assert "XLA off (flag), float32 (table)" in options.speed_choice
  # Without a phase: fine-tuning with --do_train, prediction without.
  zen3 = cpu_choice.parse_cpuinfo(ZEN3)
  options = flags_common.options_from_flags(_flag_values(["--do_train"]), cpu=zen3)
  assert "; fine-tuning: XLA off (table)" in options.speed_choice
  options = flags_common.options_from_flags(_flag_values([]), phase="pretraining", cpu=zen3)
  assert options.enable_xla is True
  # Several devices: the table does not apply (XLA fails under MirroredStrategy on CPU).
  options = flags_common.options_from_flags(
      _flag_values(["--distribution_strategy=mirrored", "--dtype=auto"]),
      phase="pretraining", cpu=zen3)
  assert (options.enable_xla, options.dtype) == (False, "float32")
  assert "--distribution_strategy=mirrored: the table describes" in options.speed_choice
  # BERT_CPU_TABLE=0 (what tests' scripts run with): the original's on every CPU.
  monkeypatch.setenv("BERT_CPU_TABLE", "0")
  options = flags_common.options_from_flags(_flag_values(["--dtype=auto"]), phase="pretraining",
                                     cpu=zen3)
  assert (options.enable_xla, options.dtype) == (False, "float32")
  assert "Why: pretraining: BERT_CPU_TABLE=0 turns the table off; the original's" in (
      options.speed_choice)
  options = flags_common.options_from_flags(_flag_values(["--enable_xla"]), phase="pretraining",
                                     cpu=zen3)
  assert options.enable_xla is True  # a flag still wins
  with pytest.raises(errors.UserError, match="--dtype=auto"):
    run_options.RunOptions(output_dir="out", dtype="auto")


def test_cpu_choice_does_not_import_tensorflow():
  result = subprocess.run(
      [sys.executable, "-c", "import sys; from bert.utils import cpu_choice; from bert.cli import flags_common; "
       "print(cpu_choice.choose(cpu_choice.this_cpu(), 'prediction', 'float32').line); "
       "print('tensorflow' in sys.modules)"],
      capture_output=True, text=True, check=True, cwd=ROOT)
  lines = result.stdout.splitlines()
  assert lines[0].startswith("CPU: ") and lines[1] == "False"


@dataclasses.dataclass(frozen=True)
class _Settings:
  output_dir: str
  normalize: str = None
  has_header: bool = False
  threshold: float = 0.5


def test_settings_come_from_the_flags_of_the_same_names():
  """options_from_flags' step for any settings class: a field from its flag (--normalize
  and --has_header as the readers take them), an override over it, a default where the
  command has no such flag."""
  def parsed(argv):
    values = flags.FlagValues()
    flags.DEFINE_string("output_dir", "out", "", flag_values=values)
    flags.DEFINE_enum("normalize", "none", ["none", "nfc"], "", flag_values=values)
    flags.DEFINE_bool("has_header", False, "", flag_values=values)
    values(["prog"] + argv)
    return values

  assert flags_common.settings_from_flags(_Settings, parsed([])) == _Settings(
      "out", normalize=None, has_header=None)
  assert flags_common.settings_from_flags(
      _Settings, parsed(["--normalize=nfc", "--has_header=false", "--output_dir=o"]),
      threshold=0.25) == _Settings("o", "nfc", False, 0.25)
  assert flags_common.options_from_flags(parsed(["--normalize=nfc"])).normalize == "nfc"


@pytest.mark.parametrize("litert,expected", [("both", "float32"), ("int8", "float32"),
                                             ("none", "bfloat16")])
def test_auto_keeps_float32_where_the_export_writes_litert_models(monkeypatch, litert,
                                                                   expected):
  """Zen 4's row picks bfloat16 for fine-tuning; an export's LiteRT models convert only
  from a float32 model, so with --export_dir and LiteRT models --dtype=auto keeps float32
  (and says why) rather than fail the export after the training."""
  monkeypatch.delenv("BERT_CPU_TABLE", raising=False)
  monkeypatch.setattr(cpu_choice, "accelerator_visible", lambda: False)
  speed = flags_common.resolve_speed(
      {"dtype": "auto", "do_train": True, "export_dir": "/tmp/export", "litert": litert},
      cpu=cpu_choice.parse_cpuinfo(ZEN4))
  assert speed["dtype"] == expected
  assert ("convert only from a float32 model" in speed["speed_choice"]) == (litert != "none")
  without_export = flags_common.resolve_speed({"dtype": "auto", "do_train": True,
                                               "litert": litert},
                                              cpu=cpu_choice.parse_cpuinfo(ZEN4))
  assert without_export["dtype"] == "bfloat16"


def _headline(line):
  """The start-up line's headline: the phase, XLA and precision with their reasons."""
  return line.split("); ", 1)[1].split("; oneDNN")[0]


def test_a_row_applies_only_to_a_cpu_with_the_units_it_was_measured_with():
  """The Xeon model 207 seen with AMX, with AVX512-BF16 alone, and with neither: one row
  each for the first two; the third is not measured, and the line says which rows of its
  model do not apply and why."""
  with_amx, no_amx, no_bf16 = (cpu_choice.parse_cpuinfo(text)
                               for text in (XEON, XEON_NO_AMX, XEON_NO_BF16))
  assert cpu_choice.table_pick(with_amx, "pretraining")[0] == (
      "Intel Xeon family 6 model 207 (AVX-512, AVX512-BF16, AMX)")
  row, pick = cpu_choice.table_pick(no_amx, "pretraining")
  assert row == "Intel Xeon family 6 model 207 (AVX-512, AVX512-BF16, no AMX)"
  # The AMX row's XLA for pretraining was never measured without AMX: the original's.
  assert (pick.enable_xla, pick.dtype) == (False, "float32")
  assert pick.evidence.startswith("not measured on this CPU kind")
  line = cpu_choice.choose(no_amx, "pretraining", dtype="auto", environ={}).line
  assert _headline(line) == "pretraining: XLA off (table), float32 (table)"
  assert "AMX-BF16" not in line.split("; pretraining")[0]  # the units it has, no AMX
  assert cpu_choice.table_pick(no_amx, "prediction")[1].evidence.startswith(
      "measured on a quiet machine: run_classifier.py --do_predict, 5,000 SST-2 "
      "sentences from MiniLM, bfloat16 0.63x float32 in the model's share (0.74x the "
      "whole process)")
  assert "bfloat16 1.00x float32" in cpu_choice.table_pick(no_amx, "fine-tuning")[1].evidence
  row, pick = cpu_choice.table_pick(no_bf16, "fine-tuning")
  assert row is None
  assert pick.evidence == (
      "table row 'Intel Xeon family 6 model 207 (AVX-512, AVX512-BF16, AMX)' does not "
      "apply, it lacks AVX512-BF16, AMX-BF16; table row 'Intel Xeon family 6 model 207 "
      "(AVX-512, AVX512-BF16, no AMX)' does not apply, it lacks AVX512-BF16; not measured: "
      "the original's XLA off and float32")
  # A Zen 5 that showed AMX would not be the CPU its row measured.
  zen5_amx = cpu_choice.parse_cpuinfo(ZEN5.replace("avx512_vnni", "avx512_vnni amx_bf16"))
  row, pick = cpu_choice.table_pick(zen5_amx, "fine-tuning")
  assert row is None and "it has AMX-BF16, which the measured CPU had not" in pick.evidence
  for table_row in cpu_choice.TABLE:
    assert table_row.units, table_row.name  # every row states its units


def test_this_machines_cpu_gets_a_row_that_matches_its_units():
  cpu = cpu_choice.this_cpu()
  row, pick = cpu_choice.table_pick(cpu, "prediction")
  if row is None:  # a CPU no row measured: the original's choice, said to be unmeasured
    assert "not measured" in pick.evidence, pick.evidence
  else:
    assert all(unit in cpu.flags for unit in next(
        r for r in cpu_choice.TABLE if r.name == row).units)


def test_explicit_bfloat16_is_honoured_where_measured_slower_and_the_line_says_so():
  no_amx = cpu_choice.parse_cpuinfo(XEON_NO_AMX)
  choice = cpu_choice.choose(no_amx, "prediction", dtype="bfloat16", environ={})
  assert choice.dtype == "bfloat16"
  assert _headline(choice.line) == "prediction: XLA off (table), bfloat16 (flag)"
  assert (" --dtype=bfloat16 is honoured, though bfloat16 was measured no faster for "
          "prediction on this CPU kind (table row 'Intel Xeon family 6 model 207 "
          "(AVX-512, AVX512-BF16, no AMX)': measured on a quiet machine: "
          "run_classifier.py --do_predict, 5,000 SST-2 sentences from MiniLM, bfloat16 "
          "0.63x float32") in choice.line
  # Where bfloat16 was measured faster (Zen 4's fine-tuning) nothing is added.
  zen4 = cpu_choice.choose(cpu_choice.parse_cpuinfo(ZEN4), "fine-tuning",
                           dtype="bfloat16", environ={})
  assert "measured no faster" not in zen4.line


# The headline every start-up line begins with, for each CPU kind in the table, this
# machine's kind, and a CPU of none: (cpuinfo, phase, flags) -> headline.
HEADLINES = [
    (ZEN5, "fine-tuning", {}, "fine-tuning: XLA off (table), bfloat16 (table)"),
    (ZEN5, "pretraining", {"enable_xla": True}, "pretraining: XLA on (flag), float32 (table)"),
    (ZEN4, "prediction", {}, "prediction: XLA off (table), bfloat16 (table)"),
    (XEON, "pretraining", {}, "pretraining: XLA on (table), float32 (table)"),
    (XEON, "pretraining", {"dtype": "bfloat16"},
     "pretraining: XLA off (bfloat16 on a CPU), bfloat16 (flag)"),
    (XEON_NO_AMX, "pretraining", {}, "pretraining: XLA off (table), float32 (table)"),
    (XEON_NO_AMX, "fine-tuning", {}, "fine-tuning: XLA off (table), float32 (table)"),
    (XEON_NO_BF16, "prediction", {}, "prediction: XLA off (table), float32 (table)"),
    (ZEN3, "pretraining", {}, "pretraining: XLA on (table), float32 (table)"),
    (ZEN3, "fine-tuning", {"dtype": "float32", "enable_xla": False},
     "fine-tuning: XLA off (flag), float32 (flag)"),
    (UNKNOWN, "prediction", {}, "prediction: XLA off (table), float32 (table)"),
]


@pytest.mark.parametrize("cpuinfo,phase,given,headline", HEADLINES)
def test_the_headline_gives_what_the_run_uses(monkeypatch, cpuinfo, phase, given, headline):
  monkeypatch.delenv("BERT_CPU_TABLE", raising=False)
  monkeypatch.setattr(cpu_choice, "accelerator_visible", lambda environ=None: False)
  values = {"dtype": "auto", **given}
  speed = flags_common.resolve_speed(values, phase, cpu=cpu_choice.parse_cpuinfo(cpuinfo))
  assert _headline(speed["speed_choice"]) == headline
  words = headline.split(": ", 1)[1]
  assert (f"XLA {'on' if speed['enable_xla'] else 'off'}" in words
          and f", {speed['dtype']} (" in words)


def test_an_export_that_overrides_the_table_is_the_headlines_reason(monkeypatch):
  """--dtype=auto with --export_dir and LiteRT models on a row that picks bfloat16: the
  run trains and exports in float32, and the headline says so with the reason, not a
  correction after the table's bfloat16."""
  monkeypatch.delenv("BERT_CPU_TABLE", raising=False)
  monkeypatch.setattr(cpu_choice, "accelerator_visible", lambda environ=None: False)
  speed = flags_common.resolve_speed(
      {"dtype": "auto", "do_train": True, "export_dir": "e", "litert": "both"},
      cpu=cpu_choice.parse_cpuinfo(ZEN5))
  assert speed["dtype"] == "float32"
  assert _headline(speed["speed_choice"]) == (
      "fine-tuning: XLA off (table), float32 (--export_dir's LiteRT models (--litert=both) "
      "convert only from a float32 model, so --dtype=auto takes float32 (--litert=none "
      "leaves it to the table); the table's bfloat16 otherwise)")
  assert "bfloat16 (table)" not in speed["speed_choice"]
