"""Puts new words into a vocab.txt in place of its [unusedN] entries, in order.

The original README advises this for domain words. Every other line is kept byte for
byte, so the vocabulary keeps its size and ids and the model's checkpoint loads
unchanged; the new words' embeddings are the unused entries' rows, which fine-tuning
trains. A word the vocabulary already has as one piece is skipped; a word the tokenizer
would split before WordPiece (punctuation, CJK ideographs) is refused with the reason;
with --do_lower_case a word is written as the tokenizer reads it (lower-cased, accents
stripped), with a note. With --corpus_file it reports how the corpus tokenizes before
and after. docs/tokenization.md says when to extend a vocabulary and when to learn a new
one.

With --init_checkpoint (and --bert_config_file, --output_dir) the model grows with its
vocabulary: the words fill the [unusedN] entries, then are appended past the end, and
--output_dir gets vocab.txt, bert_config.json with the new vocab_size and
bert_model.ckpt (Google's layout) in which each new word's embedding row and masked-LM
output bias start as the mean of the rows of the pieces the old vocabulary split it into
(--new_rows=mean_of_pieces; random for comparison). Every other weight is written byte
for byte. docs/pretraining.md#adapting-a-released-model gives the whole recipe."""

import json

from absl import flags
from absl import logging

from bert.adaptation import adaptation_options
from bert.cli import flags_common
from bert.cli import launch
from bert.training import run_options
from bert.utils import errors
from bert.utils import input_checks

flags_common.define_runtime_flags()
flags_common.define_path("words_file", None,
                         "The new words, one a line, in the order they take the [unusedN] "
                         "entries (blank lines are skipped).")
flags_common.define_path("output_file", None,
                         "Where to write the new vocab.txt (without --init_checkpoint).",
                         output="file")
flags_common.define_path("corpus_file", None,
                         "Optional text: report how many of its words are new words (now "
                         "one piece each) and the pieces per word before and after.")
flags_common.define_flags(run_options.RunOptions, ("vocab_file", "do_lower_case"), helps={
    "vocab_file": "The vocabulary to extend (vocab.txt).",
    "do_lower_case": "The model's --do_lower_case: words are written as its tokenizer "
                     "reads them (lower-cased and accents stripped when true)."})
flags_common.define_normalize_flag("before checking each word")
flags_common.define_flags(run_options.RunOptions, (
    "init_checkpoint", "bert_config_file", "output_dir", "seed"), helps={
        "init_checkpoint": "Optional: the model to grow with its vocabulary (a Google TF1 "
                           "checkpoint prefix, a run's output_dir or ckpt-N, or a Hugging "
                           "Face model.safetensors): new words past the [unusedN] entries "
                           "are then appended, and --output_dir gets the grown model.",
        "bert_config_file": "The model's bert_config.json, when --init_checkpoint grows "
                            "the model.",
        "output_dir": "Where to write vocab.txt, bert_config.json and bert_model.ckpt when "
                      "--init_checkpoint grows the model (a folder other than the "
                      "checkpoint's).",
        "seed": "Random seed for --new_rows=random."}, defaults={"output_dir": None})
flags_common.define_flags(adaptation_options.WordRowsOptions, ("new_rows",))
flags.mark_flags_as_required(["vocab_file", "words_file"])
# The flags that act only with --init_checkpoint, and the one that acts only without it.
_GROWTH_FLAGS = ("bert_config_file", "output_dir", "new_rows", "seed")

FLAGS = flags.FLAGS


def main(_):
  logging.set_verbosity(logging.INFO)
  with errors.report_user_errors(FLAGS.verbose):
    _check_mode()
    flags_common.check_paths(FLAGS)  # every output path, before any work
    inputs = ("vocab_file", "words_file") + tuple(
        flag for flag in ("corpus_file", "bert_config_file") if FLAGS[flag].value)
    for flag in inputs:
      input_checks.check_input_file(FLAGS[flag].value, flag)
    normalize = flags_common.normalize_option(FLAGS.normalize)
    if FLAGS.init_checkpoint:
      from bert.adaptation import adaptation_growth  # pylint: disable=g-import-not-at-top
      from bert.training import model_config  # pylint: disable=g-import-not-at-top
      options = flags_common.settings_from_flags(adaptation_options.WordRowsOptions, FLAGS)
      plan, summary = adaptation_growth.extend_words(
          FLAGS.vocab_file, FLAGS.words_file, FLAGS.init_checkpoint,
          model_config.load_bert_config(FLAGS.bert_config_file), FLAGS.output_dir,
          options, do_lower_case=FLAGS.do_lower_case, corpus_file=FLAGS.corpus_file,
          normalize=normalize)
      written = f"{FLAGS.output_dir}/vocab.txt"
    else:
      from bert import vocab_extension  # pylint: disable=g-import-not-at-top
      plan, summary = vocab_extension.extend_vocab(
          FLAGS.vocab_file, FLAGS.words_file, FLAGS.output_file,
          do_lower_case=FLAGS.do_lower_case, corpus_file=FLAGS.corpus_file,
          normalize=normalize)
      written = FLAGS.output_file
    for note in plan.notes:
      logging.info("%s", note)
    for number, word, reason in plan.skipped:
      logging.info("%s:%d: %r skipped: %s", FLAGS.words_file, number, word, reason)
    for word, line, unused in plan.added:
      logging.info("%s:%d: %s (%s)", written, line, word,
                   f"was {unused}" if unused else "appended")
    logging.info("Wrote %s: %d words added, %d skipped, %d [unusedN] entries left",
                 written, summary["added"], summary["skipped"], summary["unused_left"])
    print(json.dumps(summary, ensure_ascii=False))


def _check_mode():
  """The vocabulary alone (--output_file) or the model grown with it (--init_checkpoint,
  --bert_config_file, --output_dir): a flag of the other way is refused, not ignored."""
  if FLAGS.init_checkpoint:
    for flag in ("bert_config_file", "output_dir"):
      if not FLAGS[flag].value:
        raise errors.UserError(f"--init_checkpoint grows the model with its vocabulary: "
                               f"it needs --{flag}")
    if FLAGS.output_file:
      raise errors.UserError(
          f"--output_file={FLAGS.output_file} with --init_checkpoint: the new vocab.txt "
          "goes into --output_dir beside the grown model; drop --output_file")
    return
  given = [flag for flag in _GROWTH_FLAGS if FLAGS[flag].present]
  if given:
    raise errors.UserError(
        f"--{given[0]} acts with --init_checkpoint (the model grown with its vocabulary); "
        "without it the flag does nothing: add --init_checkpoint, or drop it")
  if not FLAGS.output_file:
    raise errors.UserError("--output_file is required (where to write the new vocab.txt), "
                           "or --init_checkpoint and --output_dir to grow the model too")

run = launch.entry_point(main)

if __name__ == "__main__":
  run()
