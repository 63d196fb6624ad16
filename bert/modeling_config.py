"""BertConfig: the model's shape and its hyper-parameters, read from and written to
Google's bert_config.json unchanged, and checked as it is read.

Without TensorFlow: a command that only reads or checks a config (and the formats that
convert one) need not load it. bert.modeling re-exports every name here.
"""

import copy
import json

from bert.utils import errors
from bert.utils import file_io

_CONFIG_KEYS = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "intermediate_size", "hidden_act", "hidden_dropout_prob",
    "attention_probs_dropout_prob", "max_position_embeddings", "type_vocab_size",
    "initializer_range")

# The keys that fix a weight's shape: a bert_config.json without one of them is refused.
REQUIRED_CONFIG_KEYS = (
    "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
    "intermediate_size", "max_position_embeddings", "type_vocab_size")

ACTIVATIONS = ("gelu", "gelu_exact", "relu", "tanh", "linear")

# The original's dropout before a task's output layer (run_classifier.py's keep_prob 0.9).
HEAD_DROPOUT_RATE = 0.1
# The original's --max_seq_length (run_classifier.py's, create_pretraining_data.py's).
DEFAULT_MAX_SEQ_LENGTH = 128
# The shortest sequence a model reads: [CLS], one WordPiece, [SEP].
MIN_SEQ_LENGTH = 3
# Bounds on sequence lengths: far beyond any sane run, they fail at once instead of after
# minutes of building tables. 8,192 positions is 16 times BERT's 512-position table (the
# longest context of BERT-family encoders we know of, ModernBERT's, is 8,192); a larger
# --max_seq_length is a typo.
MAX_SEQ_LENGTH_BOUND = 8192


def check_max_seq_length(max_seq_length, config=None, flag="max_seq_length",
                         least=MIN_SEQ_LENGTH, needs="[CLS], one WordPiece, [SEP]"):
  """The one rule of a sequence length (--max_seq_length, or the flag named `flag`): at
  least `least` positions (what a sequence needs: `needs`), at most MAX_SEQ_LENGTH_BOUND,
  and, with a BertConfig, no more than its max_position_embeddings. A UserError naming
  the flag otherwise."""
  if not least <= max_seq_length <= MAX_SEQ_LENGTH_BOUND:
    why = needs if max_seq_length < least else "no BERT has more positions"
    raise errors.UserError(f"--{flag}={max_seq_length}: must be between {least} and "
                           f"{MAX_SEQ_LENGTH_BOUND} ({why})")
  if config is not None and max_seq_length > config.max_position_embeddings:
    raise errors.UserError(
        f"--{flag}={max_seq_length} is larger than the model's max_position_embeddings="
        f"{config.max_position_embeddings}; lower --{flag}, or grow the model's "
        f"positions first (extend_positions.py)")


class BertConfig:
  """Configuration of a BertModel; reads and writes Google's bert_config.json unchanged."""

  def __init__(self,
               vocab_size,
               hidden_size=768,
               num_hidden_layers=12,
               num_attention_heads=12,
               intermediate_size=3072,
               hidden_act="gelu",
               hidden_dropout_prob=0.1,
               attention_probs_dropout_prob=0.1,
               max_position_embeddings=512,
               type_vocab_size=16,
               initializer_range=0.02):
    self.vocab_size = vocab_size
    self.hidden_size = hidden_size
    self.num_hidden_layers = num_hidden_layers
    self.num_attention_heads = num_attention_heads
    self.hidden_act = hidden_act
    self.intermediate_size = intermediate_size
    self.hidden_dropout_prob = hidden_dropout_prob
    self.attention_probs_dropout_prob = attention_probs_dropout_prob
    self.max_position_embeddings = max_position_embeddings
    self.type_vocab_size = type_vocab_size
    self.initializer_range = initializer_range
    self.validate()

  def validate(self, source="bert config"):
    """Raises ValueError naming the key when a value cannot describe a real model."""
    def positive_int(key):
      value = getattr(self, key)
      if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise errors.UserError(f"{source}: {key} must be a positive integer, got {value!r}")

    for key in ("vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
                "intermediate_size", "max_position_embeddings", "type_vocab_size"):
      positive_int(key)
    if self.hidden_size % self.num_attention_heads:
      raise errors.UserError(
          f"{source}: hidden_size ({self.hidden_size}) is not a multiple of "
          f"num_attention_heads ({self.num_attention_heads})")
    for key in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
      value = getattr(self, key)
      if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
        raise errors.UserError(f"{source}: {key} must be in [0, 1), got {value!r}")
    value = self.initializer_range
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
      raise errors.UserError(f"{source}: initializer_range must be positive, got {value!r}")
    if self.hidden_act not in ACTIVATIONS:
      raise errors.UserError(f"{source}: hidden_act {self.hidden_act!r} is not one of "
                             f"{', '.join(ACTIVATIONS)}")

  @classmethod
  def from_dict(cls, json_object, source="bert config"):
    """Builds a config from a dict with Google's keys.

    Unknown keys fail, and so does a missing REQUIRED_CONFIG_KEYS key (the original
    silently defaulted them, for example num_attention_heads to 12: a config that
    describes another model than the checkpoint). Only the keys that fix no weight shape
    (hidden_act, the dropout rates, initializer_range) take the original's defaults.
    """
    if not isinstance(json_object, dict):
      raise errors.UserError(
          f"{source}: expected a JSON object, got {type(json_object).__name__}")
    unknown = sorted(set(json_object) - set(_CONFIG_KEYS))
    if unknown:
      raise errors.UserError(f"{source}: unknown key(s) {', '.join(unknown)}; "
                             f"a bert_config.json holds only {', '.join(_CONFIG_KEYS)}")
    missing = [key for key in REQUIRED_CONFIG_KEYS if key not in json_object]
    if missing:
      raise errors.UserError(f"{source}: missing required key(s) {', '.join(missing)}; "
                             "every weight shape depends on them, so none has a default")
    config = cls.__new__(cls)
    defaults = cls(vocab_size=1).to_dict()
    defaults.update(json_object)
    for key, value in defaults.items():
      setattr(config, key, value)
    config.validate(source)
    return config

  @classmethod
  def from_json_file(cls, json_file):
    """Reads a bert_config.json; ValueError/OSError messages name the file."""
    try:
      with file_io.open_text(json_file, newline=None) as reader:
        text = reader.read()
    except UnicodeDecodeError:
      raise errors.UserError(errors.not_utf8_message(json_file)) from None
    except IsADirectoryError:
      raise errors.UserError(
          f"{json_file}: is a directory, expected bert_config.json") from None
    try:
      data = json.loads(text)
    except json.JSONDecodeError as exc:
      raise errors.UserError(f"{json_file}: invalid JSON at line {exc.lineno} column "
                             f"{exc.colno}: {exc.msg}") from None
    return cls.from_dict(data, source=str(json_file))

  def to_dict(self):
    return {key: copy.deepcopy(getattr(self, key)) for key in _CONFIG_KEYS}

  def to_json_string(self):
    return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

  def to_json_file(self, json_file):
    with file_io.open(json_file, "w", encoding="utf-8") as writer:
      writer.write(self.to_json_string())

  def __eq__(self, other):
    return isinstance(other, BertConfig) and self.to_dict() == other.to_dict()

  def __repr__(self):
    return f"BertConfig({self.to_dict()})"
