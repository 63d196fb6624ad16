"""Paths as people type them: every form of every path flag gives the absolute path's
result. The machinery of the path-forms matrix (its families are
tests/reliability/test_across_commands.py's).

Per family (a script, and the flags and data of one small run): the absolute-path
reference run first, then the same run with the paths typed another way, in one process
(cli_harness); every output it writes must be byte for byte the reference's. Lists and
globs are typed item by item in the form.
"""
import dataclasses
import os

from catalogue import pretraining_features

FORM_FOLDERS = {"spaces": "with space", "non_ascii": "donn\u00e9es \u6570\u636e",
                 "symlink": "link"}
PATH_FORMS = ("relative", "dot", "dotdot", "trailing_slash", "home", "spaces", "non_ascii",
              "symlink")
# The checkpoint typed as a folder (the families' "run"), as a ckpt-N prefix and as its
# .index file.
CHECKPOINT_KINDS = (("prefix", "run/ckpt-7"), ("index", "run/ckpt-7.index"))


@dataclasses.dataclass(frozen=True)
class FormFamily:
  """One small run of `script` whose path flags are typed in every form.

  flags: {flag: (path in the run's folder, is a folder)}; "{name}" is the case's own name,
  a comma a list, * a glob; a key "<name>" is a positional argument. outputs: the outputs
  compared with the reference's (a folder: every file in it but catalogue.NOT_COMPARED's).
  records: the run needs base/records/ (TFRecords, written by the harness).
  default_forms: the forms of the default suite. checkpoint_head: the model of the run's
  checkpoint ("run"): a classifier, or "pretraining" (with the masked-LM head)."""
  script: str
  materials: object
  flags: dict
  extra: tuple
  outputs: tuple
  records: bool = False
  default_forms: tuple = ()
  every_flag_alone: bool = False
  checkpoint_head: str = "classifier"


def pretraining_records(base):
  """Harness setup: the TFRecords of the pretraining family, in base/records/."""
  return [{"tfrecord": os.path.join(base, "records", name), "features": pretraining_features(),
           "count": count} for name, count in (("a.tfrecord", 4), ("b.tfrecord", 4),
                                               ("eval.tfrecord", 2))]


def _form_root(ws, families, family, group):
  """The folder of one family's cases (one group): base/ holds the data, the model files
  and (made by the reference's setup) a run's checkpoint and TFRecords; the forms' own
  folders are copies (those made by the reference copied by the cases' setup), and link/
  is a symlink to base/."""
  root = ws.path(f"pf-{family}-{group}")
  for folder in ["base"] + [f for f in FORM_FOLDERS.values() if f != "link"]:
    if not os.path.isdir(os.path.join(root, folder)):
      name = os.path.relpath(os.path.join(root, folder), ws.root)
      families[family].materials(ws, name)
      ws.write(f"{name}/model/vocab.txt", "".join(ws.vocab_lines))
      ws.write_config(f"{name}/model/bert_config.json")
  link = os.path.join(root, "link")
  if not os.path.islink(link):
    os.symlink(os.path.join(root, "base"), link)
  return root


def _typed_one(root, form, rel, folder):
  """(argument as typed, cwd, env) for the path `rel` of the run's folder in `form`."""
  base = os.path.join(root, "base")
  if form == "relative":
    return rel, base, {}
  if form == "dot":
    return "./" + rel, base, {}
  if form == "dotdot":
    return "../" + rel, os.path.join(base, "model"), {}
  if form == "trailing_slash":
    return os.path.join(base, rel) + ("/" if folder else ""), None, {}
  if form == "home":
    return "~/base/" + rel, None, {"HOME": root}
  if form in FORM_FOLDERS:
    return os.path.join(root, FORM_FOLDERS[form], rel), None, {}
  assert form == "absolute", form
  return os.path.join(base, rel), None, {}


def _typed(root, form, rel, folder):
  """_typed_one for each item of a comma-separated list."""
  items = [_typed_one(root, form, item, folder) for item in rel.split(",")]
  return ",".join(typed for typed, _, _ in items), items[0][1], items[0][2]


def _path_form_case(ws, families, family, group, name, forms, checkpoint="run"):
  """A run of the family whose flags are typed in `forms` ({flag: form}; the others
  absolute); its outputs must equal the absolute-path reference's."""
  spec = families[family]
  root = _form_root(ws, families, family, group)
  argv, cwd, env, output_folder = [], None, {}, "base"
  for flag, (rel, folder) in spec.flags.items():
    if flag == "init_checkpoint":
      rel, folder = checkpoint, checkpoint == "run"
    rel = rel.format(name=name)
    form = forms.get(flag, "absolute")
    typed, form_cwd, form_env = _typed(root, form, rel, folder)
    if rel.split("/")[0].startswith(("out-", "exp-", "cache-")) and form in ("spaces", "non_ascii"):
      output_folder = FORM_FOLDERS[form]
    argv.append(typed if flag.startswith("<") else f"--{flag}={typed}")
    cwd, env = form_cwd or cwd, {**env, **form_env}
  generated = (["run"] if "init_checkpoint" in spec.flags else []) + (
      ["records"] if spec.records else [])
  setup = [{"copy": os.path.join(root, "base", g), "to": os.path.join(root, f, g)}
           for g in generated for f in FORM_FOLDERS.values() if f != "link"]
  same = [(os.path.join(root, output_folder, out.format(name=name)),
           os.path.join(root, "base", out.format(name="reference"))) for out in spec.outputs]
  return dict(argv=argv + list(spec.extra), cwd=cwd, env=env, works=True, setup=setup,
              same=same, copies=output_folder != "base")


def _path_form_reference(families, family, group):
  def reference(ws):
    spec = families[family]
    root = _form_root(ws, families, family, group)
    case_spec = _path_form_case(ws, families, family, group, "reference", {})
    base = os.path.join(root, "base")
    made = pretraining_records(base) if spec.records else []
    if "init_checkpoint" in spec.flags:
      made.append({"foreign_checkpoint": os.path.join(base, "run"), "bert_config": ws.config,
                   "head": spec.checkpoint_head})
    case_spec["setup"] = made + case_spec["setup"]
    case_spec["same"] = []
    return case_spec
  reference.__name__ = f"path_forms_{family}_reference_{group}"
  return reference


def register(catalogue, families, checkpoint_kind_families):
  """Registers in `catalogue`, per family of `families` ({name: FormFamily}): a reference
  run per group; each form applied to every flag at once (the family's default_forms in
  the default group, the rest slow); every (flag, form) pair alone where
  every_flag_alone; in checkpoint_kind_families, the checkpoint as a prefix and as its
  .index file."""
  case = catalogue.case
  for family, spec in families.items():
    if spec.default_forms:
      case(spec.script, default=True)(_path_form_reference(families, family, "default"))
    case(spec.script)(_path_form_reference(families, family, "slow"))
    for form in PATH_FORMS:
      group = "default" if form in spec.default_forms else "slow"

      def every_flag(ws, form=form, group=group, family=family):
        return _path_form_case(ws, families, family, group, f"all-{form}",
                               {flag: form for flag in families[family].flags})
      every_flag.__name__ = f"path_form_{family}_{form}_for_every_flag"
      case(spec.script, default=group == "default")(every_flag)
      for flag in spec.flags if spec.every_flag_alone else ():
        def one_flag(ws, form=form, flag=flag, family=family):
          return _path_form_case(ws, families, family, "slow", f"{flag}-{form}", {flag: form})
        one_flag.__name__ = f"path_form_{family}_{form}_for_{flag}"
        case(spec.script)(one_flag)
      for kind, checkpoint in CHECKPOINT_KINDS if family in checkpoint_kind_families else ():
        def checkpoint_file(ws, form=form, kind=kind, checkpoint=checkpoint, family=family):
          return _path_form_case(ws, families, family, "slow", f"ckpt-{kind}-{form}",
                                 {"init_checkpoint": form}, checkpoint=checkpoint)
        checkpoint_file.__name__ = f"path_form_{family}_{form}_for_init_checkpoint_{kind}"
        case(spec.script)(checkpoint_file)
