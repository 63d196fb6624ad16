"""A setting declared once: a dataclass field that holds its type, default and help, and
from which a command's flag of the same name is made (cli/flags_common.define_flags).

    @dataclasses.dataclass(frozen=True)
    class SquadOptions:
      doc_stride: int = settings.setting(128, "When splitting up a long document ...")

The flag takes the field's type (bool, int, float, str; a sequence is a comma-separated
list), its default and its help, so neither is written twice. A command whose default
differs (run_squad's max_seq_length=384) says so where it makes its flags; that is the
one place that value is written. No absl here, and no TensorFlow: the options objects
that import this are built by library code too.
"""

import dataclasses
import typing


def setting(default=dataclasses.MISSING, help=None, *, choices=None, path=False,  # pylint: disable=redefined-builtin
            output=None, flag_name=None, help_when_unset="", required=False,
            flag_form=None):
  """A dataclass field that is also a flag.

  default: the field's default (and the flag's; no default: a required field, and a
  required flag). help: the flag's help text (None: each command that makes the flag
  gives it). choices: the values an enum flag takes. path: a file or folder (or a
  comma-separated list of them), read as a path flag (flags_common.define_path); output:
  "folder" or "file" for one the command writes to. flag_name: the flag's name where it
  is not the field's (the original's name for the same setting). help_when_unset: words
  added to the help where the flag's default is None. required: the flag must be given
  even though the field has a default. flag_form: the flag's default from the field's,
  where the flag spells a value otherwise (--normalize=none for None).
  """
  metadata = {"help": help, "choices": tuple(choices) if choices else None, "path": path,
              "output": output, "flag_name": flag_name, "help_when_unset": help_when_unset,
              "required": required, "flag_form": flag_form}
  if isinstance(default, list):  # a dataclass field takes no list default: a tuple
    default = tuple(default)
  return dataclasses.field(default=default, metadata={"setting": metadata})


def declared(cls):
  """{field name: (field, type, metadata)} of the fields of `cls` declared by setting()."""
  hints = typing.get_type_hints(cls)
  return {field.name: (field, hints[field.name], field.metadata["setting"])
          for field in dataclasses.fields(cls) if "setting" in field.metadata}


def value_kind(annotation):
  """"bool", "int", "float", "str" or "list" for a field's type (Optional[X] is X)."""
  origin = typing.get_origin(annotation)
  if origin is typing.Union:
    annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    origin = typing.get_origin(annotation)
  if annotation in (list, tuple) or origin in (list, tuple) or (
      origin is not None and issubclass(origin, typing.Sequence.__origin__)
      and annotation is not str):
    return "list"
  if annotation in (bool, int, float, str):
    return annotation.__name__
  raise TypeError(f"a setting's type must be bool, int, float, str or a sequence of str: "
                  f"{annotation!r}")
