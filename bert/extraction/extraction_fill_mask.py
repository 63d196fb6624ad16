"""Masks filled in (fill_mask.py's work): the top-k tokens and their probabilities for
each [MASK] of raw text, from a checkpoint that holds the masked-LM head.

The original's BasicTokenizer splits a literal "[MASK]" into "[", "mask", "]", so each
line is cut at every "[MASK]" (written in capitals), the pieces between are tokenized as
the model's tokenizer does, and one [MASK] token stands at each cut. A [MASK] is one
WordPiece position, as in pretraining: the model predicts one piece there, never a
whole word of several pieces (a word the vocabulary splits in two needs two [MASK]s,
each predicted on its own). Each prediction is also given as the whole word it makes
with the pieces around it: "##ing" at "walk[MASK]" makes "walking"; at "walk [MASK]",
written after a space, a "##" piece joins no word and is shown as it is. The line is
given back with every mask's top-1 in place, its pieces joined into words. Text glued
to the end of a [MASK] ("[MASK]ing") is tokenized as a word of its own.

One JSON line per text:

  {"line": 1, "text": "paris is the [MASK] of france.",
   "tokens": ["paris", "is", "the", "[MASK]", "of", "france", "."],
   "masks": [{"position": 3, "predictions": [
       {"token": "capital", "word": "capital", "probability": 0.912345}, ...]}],
   "filled": "paris is the capital of france ."}

position counts in `tokens` (without [CLS] and [SEP]); probabilities are the softmax
over the whole vocabulary, rounded to 6 decimals.
"""

import json

from absl import logging
import numpy as np
import tensorflow as tf

from bert import heads
from bert import modeling_config
from bert import tokenization
from bert.extraction import extraction_options
from bert.formats import checkpoint_files
from bert.training import checkpoints
from bert.training import model_config
from bert.utils import atomic_output
from bert.utils import errors
from bert.utils import input_checks
from bert.utils import output_lock

MASK = "[MASK]"
# The masked-LM head's weights, by Google's names (heads.MaskedLMHead.google_variables).
_MLM_WEIGHTS = ("cls/predictions/transform/dense/kernel", "cls/predictions/transform/dense/bias",
                "cls/predictions/transform/LayerNorm/gamma",
                "cls/predictions/transform/LayerNorm/beta", "cls/predictions/output_bias")
_NSP_WEIGHT = "cls/seq_relationship/output_weights"
_NO_HEAD = ("filling masks needs the masked-LM head that pretraining trains: "
            "run_pretraining.py's output_dir (or its pretrained/bert_model.ckpt), Google's "
            "pretrained release (cls/predictions/*), or a Hugging Face BertForMaskedLM / "
            "BertForPreTraining folder")


# fill_mask.py's options under the name docs/library.md gave them before.
Settings = extraction_options.FillMaskOptions


def tokenize_with_masks(tokenizer, text):
  """The text's WordPieces with a [MASK] token at each literal "[MASK]"."""
  tokens = []
  for index, part in enumerate(text.split(MASK)):
    if index:
      tokens.append(MASK)
    tokens.extend(tokenizer.tokenize(part))
  return tokens


def check_tokens(tokens, where, options):
  """A UserError naming `where` (file:line, or text N) for a text that cannot be filled
  (options: extraction_options.FillMaskOptions)."""
  count = tokens.count(MASK)
  if not count:
    raise errors.UserError(
        f"{where}: the text has no {MASK}; write {MASK} (in capitals) where a word "
        "should be predicted")
  if count > options.max_masks:
    raise errors.UserError(
        f"{where}: the text has {count} {MASK}s, more than --max_masks={options.max_masks}; "
        "give fewer, or raise --max_masks")
  if len(tokens) > options.max_seq_length - 2:
    raise errors.UserError(
        f"{where}: the text is {len(tokens)} WordPieces, more than "
        f"--max_seq_length={options.max_seq_length} holds with [CLS] and [SEP] "
        f"({options.max_seq_length - 2}); shorten it or raise --max_seq_length")


def _mlm_head_problem(kind, resolved):
  """Why the checkpoint holds no masked-LM head, as a phrase, or None where it does (or
  cannot be told before loading)."""
  if kind == checkpoint_files.GOOGLE:
    names = checkpoint_files.checkpoint_variables(resolved)
  elif kind == checkpoint_files.OURS:
    names = checkpoints.saved_signature(resolved)
    if names is None:
      return None
  else:
    return None
  missing = [n for n in _MLM_WEIGHTS if n not in names]
  if not missing:
    return None
  info = checkpoints.head_info_of(resolved) if kind == checkpoint_files.OURS else None
  what = (f"a fine-tuned model ({checkpoints.describe_head(info)})" if info and
          info.get("head") != "pretraining" else "an encoder without its pretraining heads")
  return f"it holds no masked-LM head ({missing[0]} is not in it): it is {what}"


def load_masked_lm(config, init_checkpoint):
  """heads.build_pretraining_model's model with the checkpoint's encoder and masked-LM
  head (Google's TF1 names, ours, or Hugging Face's); a UserError naming the checkpoint
  when it holds no masked-LM head."""
  kind, resolved = checkpoint_files.resolve_checkpoint(init_checkpoint)
  problem = _mlm_head_problem(kind, resolved)
  if problem:
    raise errors.UserError(f"--init_checkpoint={init_checkpoint}: {problem}; {_NO_HEAD}")
  # Our runs restore as a whole model only into the same model: with the next-sentence
  # head exactly when the run had one.
  use_nsp = True
  if kind == checkpoint_files.OURS:
    use_nsp = _NSP_WEIGHT in (checkpoints.saved_signature(resolved) or {_NSP_WEIGHT: 0})
  model, _ = heads.build_pretraining_model(config, use_next_sentence=use_nsp,
                                           dtype="float32")  # the original's numerics
  # The pooler is not used here, and a Hugging Face BertForMaskedLM has none: the
  # encoder's other weights are checked below instead.
  report = checkpoints.load_checkpoint(model, init_checkpoint, strict_encoder=False)
  missing = [n for n in report["missing"] if n.startswith("cls/predictions/")]
  if missing:
    raise errors.UserError(
        f"--init_checkpoint={init_checkpoint}: it holds no masked-LM head ({missing[0]} is "
        f"not in it); {_NO_HEAD}")
  encoder_missing = [n for n in report["missing"]
                     if n.startswith("bert/") and not n.startswith("bert/pooler/")]
  if encoder_missing:
    raise errors.UserError(
        f"--init_checkpoint={init_checkpoint}: the checkpoint does not fit the BERT config "
        f"(missing {encoder_missing[0]}); use the bert_config.json of this checkpoint")
  return model


def glued_masks(tokens, text):
  """The positions of the [MASK]s in `tokens` (the text's, tokenize_with_masks's) that
  stand apart from the word before: written after a space, punctuation or another
  word's end, or first. A "##" piece predicted there joins no word."""
  apart, at = set(), [i for i, t in enumerate(tokens) if t == MASK]
  parts = text.split(MASK)
  for index, position in enumerate(at):
    before = parts[index]
    if before:
      last = before[-1]
      glued = not (tokenization.is_whitespace(last) or
                   tokenization.is_punctuation(last) or
                   tokenization.is_chinese_char(ord(last)))
    else:
      glued = index > 0  # right after another [MASK]
    if not glued or position == 0:
      apart.add(position)
  return apart


def whole_word(tokens, position, apart=()):
  """The word that the piece at `position` belongs to: the pieces from the word's first
  to its last "##" continuation, joined. `apart`: positions whose "##" piece joins no
  word before it (glued_masks): such a piece starts its own, shown as it is."""
  start = position
  while start > 0 and tokens[start].startswith("##") and start not in apart:
    start -= 1
  end = position + 1
  while end < len(tokens) and tokens[end].startswith("##") and end not in apart:
    end += 1
  pieces = tokens[start:end]
  first = pieces[0] if start in apart else pieces[0].removeprefix("##")
  return first + "".join(p.removeprefix("##") for p in pieces[1:])


def join_pieces(tokens, apart=()):
  """WordPieces as words: "##" continuations joined to the piece before (except at the
  positions `apart`, as whole_word's)."""
  words = []
  for position, token in enumerate(tokens):
    if token.startswith("##") and position not in apart:
      if words:
        words[-1] += token[2:]
        continue
      token = token[2:]
    words.append(token)
  return " ".join(words)


class MaskFiller:
  """A checkpoint's masked-LM head over raw text. The config and vocabulary are checked
  when it is made; the checkpoint is read by the first fill (or load).

  bert_config_file, vocab_file, init_checkpoint, do_lower_case: as extract_features.py's
  flags; normalize: None or "nfc"; options: an extraction_options.FillMaskOptions.
  """

  def __init__(self, bert_config_file, vocab_file, init_checkpoint,
               do_lower_case=tokenization.DO_LOWER_CASE,
               options=extraction_options.FillMaskOptions(), normalize=None):
    config = model_config.load_bert_config(bert_config_file)
    modeling_config.check_max_seq_length(options.max_seq_length, config)
    tokenization.validate_case_matches_checkpoint(do_lower_case, init_checkpoint)
    self.tokenizer = tokenization.FullTokenizer(vocab_file, do_lower_case,
                                                normalize=normalize)
    model_config.check_vocab_matches_config(len(self.tokenizer.vocab), config, vocab_file)
    if MASK not in self.tokenizer.vocab:
      raise errors.UserError(f"vocab file {vocab_file}: has no {MASK} token to predict at")
    if options.top_k > config.vocab_size:
      raise errors.UserError(f"--top_k={options.top_k} is more than the vocabulary's "
                             f"{config.vocab_size} tokens")
    self.options, self.config, self.init_checkpoint = options, config, init_checkpoint
    self.model = self._top_k = None

  def load(self):
    """Reads the checkpoint (fill does, the first time): a UserError when it holds no
    masked-LM head."""
    if self.model is not None:
      return
    self.model = load_masked_lm(self.config, self.init_checkpoint)
    top = self.options.top_k
    spec = tf.TensorSpec([None, None], tf.int32)

    @tf.function(input_signature=[spec, spec, spec])
    def top_k(input_ids, input_mask, positions):
      outputs = self.model({"input_ids": input_ids, "input_mask": input_mask,
                            "segment_ids": tf.zeros_like(input_ids),
                            "masked_lm_positions": positions}, training=False)
      probabilities = tf.nn.softmax(outputs["masked_lm_logits"], axis=-1)
      return tf.math.top_k(probabilities, k=top)

    self._top_k = top_k

  def tokenize(self, texts, where=None):
    """The WordPieces of each text, every text checked first (check_tokens); where:
    each text's name in an error (default "text N")."""
    rows = []
    for index, text in enumerate(texts):
      tokens = tokenize_with_masks(self.tokenizer, text)
      check_tokens(tokens, where[index] if where else f"text {index + 1}", self.options)
      rows.append(tokens)
    return rows

  def fill(self, texts, where=None):
    """One dict per text: the module docstring's JSON line without "line". where: as
    tokenize's. Every text is checked before the checkpoint is read."""
    rows = self.tokenize(texts, where)
    self.load()
    results = []
    batch = self.options.batch_size
    for start in range(0, len(rows), batch):
      chunk = rows[start:start + batch]
      width = max(len(tokens) for tokens in chunk) + 2
      masks = max(tokens.count(MASK) for tokens in chunk)
      ids = np.zeros((len(chunk), width), np.int32)
      mask = np.zeros((len(chunk), width), np.int32)
      positions = np.zeros((len(chunk), masks), np.int32)
      for row, tokens in enumerate(chunk):
        pieces = ["[CLS]", *tokens, "[SEP]"]
        ids[row, :len(pieces)] = self.tokenizer.convert_tokens_to_ids(pieces)
        mask[row, :len(pieces)] = 1
        at = [i + 1 for i, t in enumerate(tokens) if t == MASK]
        positions[row, :len(at)] = at
      values, indices = (x.numpy() for x in self._top_k(ids, mask, positions))
      for row, tokens in enumerate(chunk):
        results.append(self._result(texts[start + row], tokens, values[row], indices[row]))
    return results

  def _result(self, text, tokens, values, indices):
    at = [i for i, t in enumerate(tokens) if t == MASK]
    top = [self.tokenizer.convert_ids_to_tokens([int(i)])[0] for i in indices[:len(at), 0]]
    apart = glued_masks(tokens, text)
    filled = list(tokens)
    for position, token in zip(at, top):
      filled[position] = token
    masks = []
    for m, position in enumerate(at):
      predictions = []
      for probability, index in zip(values[m], indices[m]):
        token = self.tokenizer.convert_ids_to_tokens([int(index)])[0]
        context = list(filled)
        context[position] = token
        predictions.append({"token": token, "word": whole_word(context, position, apart),
                            "probability": round(float(probability), 6)})
      masks.append({"position": position, "predictions": predictions})
    return {"text": text, "tokens": tokens, "masks": masks,
            "filled": join_pieces(filled, apart)}


def read_texts(input_file):
  """(line numbers, texts) of input_file's non-blank lines; a file without any is a
  UserError."""
  numbers, texts = [], []
  for number, line in input_checks.read_text_lines(input_file):
    if line.strip():
      numbers.append(number)
      texts.append(line.strip())
  if not texts:
    raise errors.UserError(f"--input_file={input_file}: the file holds no text; give one "
                           f"text a line, with {MASK} where a word should be predicted")
  return numbers, texts


def fill_mask_file(input_file, output_file, vocab_file, do_lower_case, bert_config_file,
                   init_checkpoint, options=extraction_options.FillMaskOptions(),
                   normalize=None):
  """Reads input_file (one text a line; blank lines skipped), writes output_file's JSON
  lines atomically; returns how many texts. Every text, and the output's place (its
  folder created, as every command's), is checked before the model loads."""
  numbers, texts = read_texts(input_file)
  where = [f"{input_file}:{n}" for n in numbers]
  atomic_output.prepare_output_file(output_file, "output_file", clean=False)
  # One run per output file from here on; a killed run's hidden temporary is removed.
  with output_lock.lock_output(output_file, "output_file", is_file=True):
    filler = MaskFiller(bert_config_file, vocab_file, init_checkpoint, do_lower_case,
                        options, normalize)
    results = filler.fill(texts, where)
    with errors.disk_full_names(output_file, "output_file"):
      with atomic_output.atomic_open(output_file) as writer:
        for number, result in zip(numbers, results):
          writer.write(json.dumps({"line": number, **result}, ensure_ascii=False) + "\n")
  logging.info("Filled the masks of %d texts into %s", len(texts), output_file)
  return len(texts)
