"""docs/adding_a_format.md against the repository: its table of the formats there are is
the writers table (bert/formats/writers.py), each format's module, test and docs exist,
every place its list names exists and names every format, and the table loads no
TensorFlow."""
import ast
import os
import re
import subprocess
import sys

from bert.formats import writers
from conftest import ROOT

PAGE = os.path.join("docs", "adding_a_format.md")


def _read(path):
  with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
    return handle.read()


def _section(text, heading):
  """The lines of `text` under `## heading`, up to the next `## `."""
  section = text[text.index(f"\n## {heading}\n"):]
  return section[:section.index("\n## ", 1)] if "\n## " in section[1:] else section


def _rows(heading):
  """The cells of the table rows (after its header) in the page's section `heading`."""
  lines = [line for line in _section(_read(PAGE), heading).splitlines()
           if line.startswith("|")]
  assert set(lines[1]) <= set("|-"), lines[1]  # the header's separator
  return [[cell.strip().strip("`") for cell in line.split("|")[1:-1]] for line in lines[2:]]


def _module_list_formats_level():
  text = _read("docs/MODULES.md")
  return text[text.index("## Level 2:"):text.index("## Level 3:")]


def _flags_format_row():
  section = _read("docs/FLAGS.md").split("\n## export_encoder.py\n", 1)[1].split("\n## ")[0]
  (row,) = [line for line in section.splitlines() if line.startswith("| `--format` |")]
  return row


def _export_encoder_format_row():
  (row,) = [line for line in _read("docs/export_encoder.md").splitlines()
            if line.startswith("| `--format` |")]
  return row


# Each place of the page's list: is the format (its --format name, its row) named there?
PLACES = {
    "bert/formats/writers.py": lambda name, writer: name in writers.WRITERS,
    "docs/FLAGS.md": lambda name, writer: f"{name}: {writer.help}" in _flags_format_row(),
    "docs/export_encoder.md": lambda name, writer: f"`{name}`" in _export_encoder_format_row(),
    "docs/MODULES.md": lambda name, writer: f"`bert/formats/{writer.module}.py`"
                                            in _module_list_formats_level(),
    "docs/adding_a_format.md": lambda name, writer: name in [
        row[0] for row in _rows("The formats there are")],
}


def test_the_page_lists_exactly_the_places_checked_here():
  assert [row[0] for row in _rows("Every place a new format touches")] == list(PLACES)
  for place in PLACES:
    assert os.path.isfile(os.path.join(ROOT, place)), place


def test_the_pages_formats_are_the_writers_table_each_with_its_module_test_and_docs():
  rows = _rows("The formats there are")
  assert [row[0] for row in rows] == list(writers.WRITERS)
  for name, module, test, docs in rows:
    assert module == f"bert/formats/{writers.WRITERS[name].module}.py", name
    tree = ast.parse(_read(module))
    assert "export" in [node.name for node in tree.body
                        if isinstance(node, ast.FunctionDef)], f"{module} has no export()"
    assert os.path.isfile(os.path.join(ROOT, test)), test
    assert os.path.isfile(os.path.join(ROOT, docs)), docs


def test_every_format_is_in_every_place():
  missing = [(name, place) for name, writer in writers.WRITERS.items()
             for place, named in PLACES.items() if not named(name, writer)]
  assert missing == []


def test_every_format_reads_only_known_options():
  for name, writer in writers.WRITERS.items():
    assert set(writer.options) <= set(writers.OPTIONS), name


def test_every_path_the_page_names_exists():
  named = set(re.findall(r"`((?:bert|tests|docs|tools)/[\w/.]+\.(?:py|md))`", _read(PAGE)))
  assert named and [path for path in sorted(named)
                    if not os.path.isfile(os.path.join(ROOT, path))] == []


def test_the_writers_table_loads_no_tensorflow():
  code = ("import sys; import bert.formats.writers; "
          "print(sorted(m for m in ('tensorflow', 'keras') if m in sys.modules))")
  result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                          text=True, check=True)
  assert result.stdout == "[]\n"
