"""CoNLL-2003 named-entity recognition's own data: its label set and its checks.

Used by tagging_ner_task.py; reads no absl FLAGS. Everything a token-level task
shares (reading CoNLL columns, first-WordPiece labels, windows over long sentences with
the max-context rule, decoding, the conlleval-format writer) is in tagging_data.py, and
conlleval's chunk rules and scores in tagging_conlleval.py; NER is their IOB case: the entity
tags (the last column) are learned as IOB2 (`make_label_list`) whether the file is IOB1
or IOB2, and predictions are written back in the file's scheme.
"""

import hashlib

from bert.tagging import tagging_conlleval
from bert.tagging import tagging_data
from bert.utils import errors

# The four CoNLL-2003 entity types, in the order of the shared task's description.
CONLL2003_ENTITY_TYPES = ("PER", "ORG", "LOC", "MISC")


def make_label_list(entity_types=CONLL2003_ENTITY_TYPES):
  """The IOB2 tag set the model predicts: "O" first (id 0), then B-/I- per type."""
  labels = ["O"]
  for entity_type in entity_types:
    labels += [f"B-{entity_type}", f"I-{entity_type}"]
  return labels


def check_labels(examples, label_list, path):
  """Every gold tag, read as IOB2, must be in label_list; else a UserError naming the line."""
  unknown = tagging_data.first_unknown_tag(examples, label_list, iob=True)
  if unknown:
    example, offset = unknown
    types = sorted({tagging_conlleval.split_tag(t)[1] for t in label_list if t != "O"})
    raise errors.UserError(
        f"{path}:{example.line_number + offset}: tag {example.labels[offset]!r} is not "
        f"one of the entity types {types}; pass the data's types with --entity_types")


def settings_fingerprint(**settings):
  """Short stable hash of the settings that determine cached features."""
  text = repr(sorted(settings.items()))
  return hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]
