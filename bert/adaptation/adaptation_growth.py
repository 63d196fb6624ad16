"""A pretrained model grown for its new use, written in Google's layout: more positions
(extend_positions.py) and more words (extend_vocab.py --init_checkpoint).

Positions: the table [max_position_embeddings, hidden] grows to the new length. By
default the new rows repeat the trained ones in order (row i takes row i mod the old
length), as Longformer extended RoBERTa's 512 positions to 4,096: each new position
starts as a position the model knows, and attention, which is mostly about content, works
from the first step. `random` draws them as the original initialises (truncated normal,
initializer_range), for comparison.

Words: each new word takes an [unusedN] entry of the vocabulary, then new ids past its
end (bert/vocab_extension.py decides the lines). By default each new word's embedding row
and its masked-LM output bias start as the mean of the rows of the pieces the old
vocabulary split it into (Hugging Face's resize_token_embeddings draws new rows around
the mean of all rows, after Hewitt 2021; the mean of the word's own pieces starts it
where the model read it before). A word put into an [unusedN] slot gets the same. `random`
draws the rows as the original initialises and the bias as zero.

Every other weight is written byte for byte. The checkpoint is read in any of the three
layouts (Google's, ours, Hugging Face's); optimizer slots are left out (they belong to
the optimizer of the old shapes, and a start needs none, as Google's releases hold none).
"""

import dataclasses
import math

import keras
import numpy as np
from absl import logging

from bert import heads
from bert import modeling
from bert import tokenization
from bert import vocab_extension
from bert.formats import checkpoint_files
from bert.formats import hugging_face
from bert.training import export_loading
from bert.utils import atomic_output
from bert.utils import errors
from bert.utils import file_io
from bert.utils import paths

WORD_EMBEDDINGS = "bert/embeddings/word_embeddings"
POSITION_EMBEDDINGS = "bert/embeddings/position_embeddings"
OUTPUT_BIAS = "cls/predictions/output_bias"
# What a grown model's folder holds (Google's release layout).
CHECKPOINT_NAME, CONFIG_NAME, VOCAB_NAME = "bert_model.ckpt", "bert_config.json", "vocab.txt"


@dataclasses.dataclass
class Weights:
  """A checkpoint's weights by Google name (np.ndarray each), its config, where they were
  read (kind: checkpoint_files' GOOGLE / OURS / HUGGING_FACE; path: the resolved
  checkpoint) and the names left out (optimizer slots)."""
  tensors: dict
  config: modeling.BertConfig
  kind: str
  path: str
  left_out: list


def _is_optimizer_slot(name):
  return name.endswith(("/adam_m", "/adam_v")) or "/lamb_" in name


def _expected_shapes(config):
  """{Google name: shape} of the weights of a pretraining model built from config."""
  model, _ = heads.build_pretraining_model(config, dtype="float32")
  return {name: tuple(variable.shape)
          for name, variable in modeling.google_variable_map(model).items()}


def read_weights(config, init_checkpoint, config_flag="bert_config_file"):
  """Every weight of a checkpoint of any layout, checked against `config`.

  A checkpoint whose embeddings or any other weight disagree with the config is one line
  naming the weight and both shapes (the vocabulary's size first: the commonest mistake).
  """
  kind, resolved = checkpoint_files.resolve_checkpoint(init_checkpoint)
  left_out = []
  if kind == checkpoint_files.OURS:
    loaded = export_loading.load_for_export(config, init_checkpoint)
    variables = modeling.google_variable_map(loaded.model)
    tensors = {name: variables[name].numpy() for name in loaded.weight_names
               if name in variables}
  else:
    with checkpoint_files.reading(resolved):
      raw = (checkpoint_files.read_google_checkpoint(resolved)
             if kind == checkpoint_files.GOOGLE
             else hugging_face.read_hugging_face_checkpoint(resolved))
    tensors = {n: v for n, v in raw.items() if not _is_optimizer_slot(n)}
    left_out = sorted(n for n in raw if _is_optimizer_slot(n))
  where = f"--init_checkpoint={init_checkpoint}"
  if WORD_EMBEDDINGS not in tensors:
    raise errors.UserError(f"{where}: holds no {WORD_EMBEDDINGS}: not a BERT checkpoint")
  rows = tensors[WORD_EMBEDDINGS].shape[0]
  if rows != config.vocab_size:
    raise errors.UserError(
        f"{where} holds a vocabulary of {rows} rows ({WORD_EMBEDDINGS}), but "
        f"--{config_flag} says vocab_size={config.vocab_size}; use the bert_config.json "
        "of that checkpoint")
  expected = _expected_shapes(config)
  for name in sorted(tensors, key=lambda n: (n != POSITION_EMBEDDINGS, n)):
    shape = tuple(tensors[name].shape)
    if name in expected and expected[name] != shape:
      raise errors.UserError(
          f"{where}: {name} is {list(shape)}, but --{config_flag} makes it "
          f"{list(expected[name])}; use the bert_config.json of that checkpoint")
  return Weights(tensors, config, kind, resolved, left_out)


def _truncated_normal(shape, config, seed):
  """float32 rows drawn as the original initialises a weight (modeling_ops.initializer)."""
  draw = keras.initializers.TruncatedNormal(stddev=config.initializer_range, seed=seed)
  return keras.ops.convert_to_numpy(draw(shape, dtype="float32"))


def grow_positions(weights, options):
  """(tensors, config) with the position table grown to options.max_position_embeddings;
  every other tensor is the same object."""
  table = weights.tensors[POSITION_EMBEDDINGS]
  old, target = table.shape[0], options.max_position_embeddings
  if target <= old:
    raise errors.UserError(
        f"--max_position_embeddings={target} is not more than the model's {old} "
        "positions; give a larger number (a model keeps the positions it has)")
  if options.new_rows == "copy":
    grown = np.concatenate([table] * math.ceil(target / old))[:target]
  else:
    grown = np.concatenate(
        [table, _truncated_normal((target - old, table.shape[1]), weights.config,
                                  options.seed)])
  config = modeling.BertConfig.from_dict({**weights.config.to_dict(),
                                          "max_position_embeddings": target})
  return {**weights.tensors, POSITION_EMBEDDINGS: grown.astype(table.dtype)}, config


def grow_words(weights, plan, old_vocab, options):
  """(tensors, config, pieces) with a row for each word the plan adds: the embedding
  table and the masked-LM output bias (when the checkpoint has it) grown by the words
  appended; every added word's row (appended or in an [unusedN] slot) set as
  options.new_rows says. pieces: {word: the old vocabulary's pieces of it}."""
  table = weights.tensors[WORD_EMBEDDINGS]
  appended = sum(unused is None for _, _, unused in plan.added)
  size, hidden = table.shape[0] + appended, table.shape[1]
  grown = np.concatenate([table, np.zeros((appended, hidden), table.dtype)])
  bias = weights.tensors.get(OUTPUT_BIAS)
  grown_bias = None if bias is None else np.concatenate(
      [bias, np.zeros((appended,), bias.dtype)])
  wordpiece = tokenization.WordpieceTokenizer(old_vocab)
  pieces = {}
  random_rows = (_truncated_normal((len(plan.added), hidden), weights.config, options.seed)
                 if options.new_rows == "random" else None)
  for index, (word, line, _) in enumerate(plan.added):
    pieces[word] = wordpiece.tokenize(word)
    if random_rows is not None:
      grown[line - 1] = random_rows[index]
      if grown_bias is not None:
        grown_bias[line - 1] = 0.0
      continue
    ids = tokenization.convert_tokens_to_ids(old_vocab, pieces[word])
    grown[line - 1] = table[ids].mean(axis=0)
    if grown_bias is not None:
      grown_bias[line - 1] = bias[ids].mean()
  tensors = {**weights.tensors, WORD_EMBEDDINGS: grown}
  if grown_bias is not None:
    tensors[OUTPUT_BIAS] = grown_bias
  config = modeling.BertConfig.from_dict({**weights.config.to_dict(), "vocab_size": size})
  return tensors, config, pieces


def check_output_dir(output_dir, init_checkpoint, inputs):
  """Refuses an --output_dir whose files would overwrite an input: the folder of the
  checkpoint (a run's folder, or beside a bert_model.ckpt: its `checkpoint` state file
  would be rewritten), or an input file of the same name. inputs: {flag: path}."""
  target = paths.abspath(output_dir).rstrip("/")
  _, resolved = checkpoint_files.resolve_checkpoint(init_checkpoint)
  if paths.abspath(paths.dirname(resolved)).rstrip("/") == target:
    raise errors.UserError(
        f"--output_dir={output_dir} holds --init_checkpoint={init_checkpoint}: writing "
        f"{CHECKPOINT_NAME} there would overwrite the model it is made from or its "
        "folder's checkpoint file; give a new folder")
  for flag, path in inputs.items():
    name = {"vocab_file": VOCAB_NAME, "bert_config_file": CONFIG_NAME}.get(flag)
    if path and name and paths.abspath(path) == paths.join(target, name):
      raise errors.UserError(
          f"--output_dir={output_dir} would overwrite --{flag}={path}; give a new folder")


def write_model(output_dir, tensors, config, vocab_bytes=None):
  """output_dir/bert_model.ckpt (Google's layout), bert_config.json and, given its bytes,
  vocab.txt; each written whole or not at all."""
  file_io.makedirs(output_dir)
  prefix = paths.join(output_dir, CHECKPOINT_NAME)
  with errors.disk_full_names(prefix, "output_dir"):
    checkpoint_files.write_google_checkpoint(tensors, prefix)
    with atomic_output.atomic_open(paths.join(output_dir, CONFIG_NAME)) as handle:
      handle.write(config.to_json_string())
    if vocab_bytes is not None:
      with atomic_output.atomic_open(paths.join(output_dir, VOCAB_NAME), "wb") as handle:
        handle.write(vocab_bytes)
  return prefix


def _describe(weights):
  rows = f", {len(weights.left_out)} optimizer slots left out" if weights.left_out else ""
  return f"{weights.path} ({weights.kind}, {len(weights.tensors)} weights{rows})"


def extend_positions(init_checkpoint, config, output_dir, options, vocab_file=None,
                     config_flag="bert_config_file"):
  """extend_positions.py's work: the model of init_checkpoint with options'
  max_position_embeddings, in output_dir (with a copy of vocab_file, given one). Returns a
  summary dict."""
  check_output_dir(output_dir, init_checkpoint,
                   {"vocab_file": vocab_file, "bert_config_file": None})
  vocab_bytes = None
  if vocab_file:
    vocab = tokenization.load_vocab(vocab_file)
    if len(vocab) != config.vocab_size:
      raise errors.UserError(
          f"--vocab_file={vocab_file}: {len(vocab)} tokens, but --{config_flag} says "
          f"vocab_size={config.vocab_size}; pass the model's own vocab.txt")
    vocab_bytes = file_io.read_bytes(vocab_file)
  weights = read_weights(config, init_checkpoint, config_flag)
  old = config.max_position_embeddings
  tensors, grown = grow_positions(weights, options)
  logging.info("Read %s", _describe(weights))
  prefix = write_model(output_dir, tensors, grown, vocab_bytes)
  logging.info("Wrote %s: positions %d -> %d (new rows: %s)", prefix, old,
               grown.max_position_embeddings, options.new_rows)
  return {"output": prefix, "max_position_embeddings": grown.max_position_embeddings,
          "old_max_position_embeddings": old, "new_rows": options.new_rows,
          "weights": len(tensors), "optimizer_slots_left_out": len(weights.left_out)}


def extend_words(vocab_file, words_file, init_checkpoint, config, output_dir, options,
                 do_lower_case=tokenization.DO_LOWER_CASE, corpus_file=None,
                 normalize=None,
                 config_flag="bert_config_file"):
  """extend_vocab.py --init_checkpoint's work: output_dir/vocab.txt with the new words
  ([unusedN] entries first, then appended), bert_config.json with the new vocab_size and
  bert_model.ckpt with a row for each. Returns (plan, summary)."""
  check_output_dir(output_dir, init_checkpoint,
                   {"vocab_file": vocab_file, "bert_config_file": None})
  old_vocab = tokenization.load_vocab(vocab_file)
  if len(old_vocab) != config.vocab_size:
    raise errors.UserError(
        f"--vocab_file={vocab_file}: {len(old_vocab)} tokens, but --{config_flag} says "
        f"vocab_size={config.vocab_size}; pass the model's own vocab.txt")
  plan = vocab_extension.plan_extension(vocab_file, words_file, do_lower_case, normalize,
                                        append=True)
  summary = vocab_extension.summarize(plan, vocab_file, corpus_file, do_lower_case,
                                      normalize)
  weights = read_weights(config, init_checkpoint, config_flag)
  tensors, grown, pieces = grow_words(weights, plan, old_vocab, options)
  logging.info("Read %s", _describe(weights))
  prefix = write_model(output_dir, tensors, grown, plan.output)
  unknown = sum(p == [tokenization.UNK_TOKEN] for p in pieces.values())
  summary.update({
      "appended": sum(unused is None for _, _, unused in plan.added),
      "vocab_size": grown.vocab_size, "old_vocab_size": config.vocab_size,
      "new_rows": options.new_rows, "output": prefix,
      "pieces_per_new_word": round(sum(map(len, pieces.values())) / len(pieces), 4)
      if pieces else 0.0,
      "new_words_from_unk": unknown,
      "masked_lm_bias": OUTPUT_BIAS in weights.tensors})
  return plan, summary
