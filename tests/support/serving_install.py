"""A wheel built from this tree and the serving install of it (`pip install
bert-tensorflow2`, no extra) in a new virtual environment, offline.

The serving environment sees only the distributions that the wheel's own requirements
(no extra) reach from this environment: their files are linked into one folder that a .pth
file adds to the new environment, and pip then installs the wheel *with* its dependencies
and --no-index, so its metadata alone must be satisfied by them. TensorFlow, tensorflow-text
and Keras are not among them, unless the core requirements pull them in.
"""
import os
import shutil
import subprocess
import sys
import zipfile
from importlib import metadata

try:
  from packaging.requirements import Requirement
  from packaging.utils import canonicalize_name
except ImportError:  # pip always carries it
  from pip._vendor.packaging.requirements import Requirement  # pylint: disable=ungrouped-imports
  from pip._vendor.packaging.utils import canonicalize_name  # pylint: disable=ungrouped-imports

from conftest import ROOT

DISTRIBUTION_FILES = ("pyproject.toml", "README.md", "LICENSE")
# pip without this machine's configuration (its find-links, indexes, constraints).
PIP_ENV = {**{k: v for k, v in os.environ.items() if not k.startswith("PIP_")},
           "PIP_CONFIG_FILE": os.devnull, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def build_wheel(work):
  """The wheel of this tree, built from a copy (building writes nothing into the clone)."""
  source = work / "source"
  shutil.copytree(os.path.join(ROOT, "bert"), source / "bert",
                  ignore=shutil.ignore_patterns("__pycache__"))
  for name in DISTRIBUTION_FILES:
    shutil.copy(os.path.join(ROOT, name), source / name)
  wheels = work / "wheels"
  subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
                  "--no-index", "-q", "-w", str(wheels), str(source)],
                 check=True, capture_output=True, text=True, env=PIP_ENV)
  (wheel,) = os.listdir(wheels)
  return wheels / wheel


def wheel_metadata(wheel):
  """(the wheel's METADATA as an email message, its file names)."""
  import email  # pylint: disable=g-import-not-at-top
  with zipfile.ZipFile(wheel) as archive:
    names = archive.namelist()
    (meta,) = [n for n in names if n.endswith(".dist-info/METADATA")]
    return email.message_from_bytes(archive.read(meta)), names


def core_requirements(message):
  """The wheel's requirements without an extra (what a plain pip install brings)."""
  return [r for r in message.get_all("Requires-Dist") or []
          if not Requirement(r).marker or Requirement(r).marker.evaluate({"extra": ""})]


def closure(requirements):
  """{canonical name: Distribution} of this environment reached from requirements."""
  found = {}
  todo = list(requirements)
  while todo:
    requirement = Requirement(todo.pop())
    if requirement.marker and not requirement.marker.evaluate({"extra": ""}):
      continue
    name = canonicalize_name(requirement.name)
    if name in found:
      continue
    found[name] = metadata.distribution(requirement.name)
    todo.extend(found[name].requires or [])
  return found


def _top_level(distribution):
  """The distribution's own entries of site-packages (its folders, modules, dist-info)."""
  return sorted({f.parts[0] for f in distribution.files or [] if f.parts[0] != ".."})


def installed_bytes(distributions):
  total = 0
  for distribution in distributions.values():
    for entry in distribution.files or []:
      if entry.parts[0] != "..":
        path = distribution.locate_file(entry)
        if os.path.isfile(path):
          total += os.path.getsize(path)
  return total


def new_env(env, packages):
  """The python of a new virtual environment at `env` that also sees the distributions in
  the folder `packages` (a .pth file names it), so pip finds them without an index."""
  subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
  python = str(env / "bin" / "python")
  site = subprocess.run(
      [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
      check=True, capture_output=True, text=True).stdout.strip()
  with open(os.path.join(site, "offline_packages.pth"), "w", encoding="utf-8") as handle:
    handle.write(str(packages) + "\n")
  return python


def make_serving_env(work, wheel):
  """(python of a new environment holding the serving install, {name: Distribution} of
  the dependencies it was given)."""
  message, _ = wheel_metadata(wheel)
  dependencies = closure(core_requirements(message))
  linked = work / "serving_dependencies"
  linked.mkdir()
  for distribution in dependencies.values():
    for entry in _top_level(distribution):
      target = distribution.locate_file(entry)
      if os.path.exists(target) and not (linked / entry).exists():
        os.symlink(target, linked / entry)
  python = new_env(work / "serving", linked)
  # With its dependencies, from no index: pip must find every one already there.
  subprocess.run([python, "-m", "pip", "install", "-q", "--no-index", str(wheel)],
                 check=True, capture_output=True, text=True, env=PIP_ENV)
  return python, dependencies
