"""The library's public entry points check their inputs up front (docs/library.md's calls):
the encoder and the heads raise a ValueError naming the argument, its shape or value and
the limit, eagerly; a traced graph gets only the run-time check of the three inputs'
shapes (when they are unknown when tracing); the tokenizer refuses a vocabulary
without the [UNK] it emits and names an unknown token. Also: every flag that acts only
with another is in the one partner table (run_options.PARTNERS) and refused without it,
as a flag typed and as an option's value."""
import os
import re

from absl import flags
import numpy as np
import pytest
import tensorflow as tf

from conftest import ROOT
import tiny
from bert import heads
from bert import modeling
from bert import tokenization
from bert.cli import flags_common
from bert.utils import errors

VOCAB = 100
CONFIG = tiny.tiny_config(VOCAB, max_position_embeddings=16, type_vocab_size=2)


@pytest.fixture(scope="module")
def encoder():
  return modeling.BertModel(CONFIG)


def _feed(seq=6, batch=1, **changes):
  feed = {"input_ids": np.full((batch, seq), 7, np.int32),
          "input_mask": np.ones((batch, seq), np.int32),
          "segment_ids": np.zeros((batch, seq), np.int32)}
  feed.update(changes)
  return feed


BAD = [
    ("mask shorter than ids", dict(input_mask=np.ones((1, 4), np.int32)),
     "bert: input_mask has shape [1, 4], input_ids [1, 6]; the three inputs must have the "
     "same shape"),
    ("segments of another batch", dict(segment_ids=np.zeros((2, 6), np.int32)),
     "bert: segment_ids has shape [2, 6], input_ids [1, 6]; the three inputs must have the "
     "same shape"),
    ("ids of rank 1", dict(input_ids=np.ones((6,), np.int32)),
     "bert: input_ids has shape [6]; each input is [batch, seq]"),
    ("positions past the config's", _feed(seq=20),
     "bert: input_ids has 20 positions per row (shape [1, 20]), more than the config's "
     "max_position_embeddings 16"),
    ("segment id 2", dict(segment_ids=np.full((1, 6), 2, np.int32)),
     "bert: segment_ids holds 2; the config's type_vocab_size is 2, so each must be in "
     "[0, 1]"),
    ("negative segment id", dict(segment_ids=np.full((1, 6), -1, np.int32)),
     "bert: segment_ids holds -1; the config's type_vocab_size is 2, so each must be in "
     "[0, 1]"),
    ("id past the vocabulary", dict(input_ids=np.full((1, 6), VOCAB, np.int32)),
     f"bert: input_ids holds {VOCAB}; the config's vocab_size is {VOCAB}, so each must be in "
     f"[0, {VOCAB - 1}]"),
    ("missing input", {"segment_ids": None},
     "bert: inputs lack segment_ids (a dict of input_ids, input_mask and segment_ids, each "
     "int [batch, seq])"),
]


@pytest.mark.parametrize("what,changes,message", BAD, ids=[b[0] for b in BAD])
def test_the_encoder_names_each_bad_argument_eagerly(encoder, what, changes, message):
  del what
  feed = changes if "input_ids" in changes and "input_mask" in changes else _feed(**changes)
  feed = {k: v for k, v in feed.items() if v is not None}
  with pytest.raises(ValueError) as raised:
    encoder(feed)
  assert str(raised.value) == message
  # The same values as eager tensors.
  with pytest.raises(ValueError) as raised:
    encoder({k: tf.constant(v) for k, v in feed.items()})
  assert str(raised.value) == message


def test_good_inputs_still_give_the_encoders_outputs(encoder):
  feed = _feed(seq=16)
  feed["segment_ids"][:, 8:] = 1
  feed["input_ids"][0, 0] = VOCAB - 1
  outputs = encoder(feed)
  assert outputs["sequence_output"].shape == (1, 16, 32)


def test_inside_a_traced_graph_values_are_not_checked_and_shapes_once(encoder):
  spec = {name: tf.TensorSpec([None, None], tf.int32)
          for name in ("input_ids", "input_mask", "segment_ids")}

  def ops_of(check):
    saved = modeling.check_encoder_inputs
    modeling.check_encoder_inputs = check
    try:
      graph = tf.function(lambda x: encoder(x)["pooled_output"]).get_concrete_function(
          spec).graph
    finally:
      modeling.check_encoder_inputs = saved
    return [op.type for op in graph.get_operations()]

  assert ops_of(modeling.check_encoder_inputs) == ops_of(lambda *args, **kwargs: None)
  # Shapes known only at run time get the one run-time check of the three shapes (an
  # Assert), which a graph of shapes known when tracing does without.
  def asserts(shape):
    specs = {name: tf.TensorSpec(shape, tf.int32) for name in spec}
    graph = tf.function(lambda x: encoder(x)["pooled_output"]).get_concrete_function(
        specs).graph
    return [op.name for op in graph.get_operations() if op.type == "Assert"]
  assert [name.rsplit("/", 2)[-2:] for name in asserts([None, None])] == [
      ["input_shapes_agree", "Assert"]]
  assert asserts([2, 6]) == []
  # Values are not looked at in a graph: a bad segment id runs as TensorFlow runs it.
  traced = tf.function(lambda x: encoder(x)["pooled_output"])
  assert traced(_feed()).shape == (1, 32)
  # A shape known when tracing is checked there too.
  static = {name: tf.TensorSpec([1, 20], tf.int32) for name in spec}
  with pytest.raises(ValueError, match="input_ids has 20 positions per row"):
    tf.function(lambda x: encoder(x)["pooled_output"]).get_concrete_function(static)


def test_a_head_model_passes_the_encoders_message_on():
  model, _ = heads.build_classifier_model(CONFIG, 2)
  with pytest.raises(ValueError, match=re.escape(
      "bert: input_mask has shape [1, 4], input_ids [1, 6]; the three inputs must have "
      "the same shape")):
    model(_feed(input_mask=np.ones((1, 4), np.int32)))


def test_masked_lm_positions_past_the_sequence_are_named():
  model, _ = heads.build_pretraining_model(CONFIG)
  feed = _feed(masked_lm_positions=np.array([[1, 6]], np.int32))
  with pytest.raises(ValueError, match=re.escape(
      "masked_lm_positions holds 6; the inputs have 6 positions per row, so each must be "
      "in [0, 5]")):
    model(feed)
  feed["masked_lm_positions"] = np.array([[1, 5]], np.int32)
  assert model(feed)["masked_lm_logits"].shape == (1, 2, VOCAB)


@pytest.mark.parametrize("build,name,value", [
    (heads.build_classifier_model, "num_labels", 0),
    (heads.build_token_classifier_model, "num_labels", -2),
    (heads.build_multiple_choice_model, "num_choices", 0),
    (heads.build_classifier_model, "num_labels", 2.5)])
def test_a_heads_count_must_be_a_whole_number(build, name, value):
  with pytest.raises(ValueError, match=re.escape(f"{name}={value!r}: must be a whole number "
                                                 ">= 1")):
    build(CONFIG, value)


def test_a_vocabulary_without_unk_is_refused_at_load(tmp_path):
  path = tmp_path / "vocab.txt"
  path.write_text("[PAD]\n[CLS]\n[SEP]\nthe\ncat\n", encoding="utf-8")
  with pytest.raises(ValueError) as raised:
    tokenization.FullTokenizer(str(path))
  assert str(raised.value) == (f"vocab file {path}: has no [UNK], which the tokenizer emits "
                               "for every word outside the vocabulary")


def test_an_unknown_token_or_id_is_a_key_error_naming_it_and_the_file(tmp_path):
  path = tmp_path / "vocab.txt"
  path.write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\nthe\ncat\n", encoding="utf-8")
  tokenizer = tokenization.FullTokenizer(str(path))
  assert tokenizer.convert_tokens_to_ids(tokenizer.tokenize("the zebra")) == [4, 1]
  with pytest.raises(KeyError) as raised:
    tokenizer.convert_tokens_to_ids(["the", "zebra"])
  assert raised.value.args[0] == f"token 'zebra' is not in the vocabulary {path} (6 tokens)"
  with pytest.raises(KeyError) as raised:
    tokenizer.convert_ids_to_tokens([6])
  assert raised.value.args[0] == f"id 6 is not in the vocabulary {path} (ids 0 to 5)"


# --------------------------------------------------------------------------- partners


def _flag_table():
  """(flag, help) of every command's flags (docs/FLAGS.md, generated from the definitions;
  tests/project/test_docs.py keeps it current)."""
  with open(os.path.join(ROOT, "docs", "FLAGS.md"), encoding="utf-8") as handle:
    text = handle.read().split("\n## Path flags\n", 1)[0]
  return re.findall(r"^\| `--([a-z_]+)` \|[^|]*\|[^|]*\| (.*) \|$", text, re.MULTILINE)


def test_every_flag_that_acts_only_with_another_is_in_the_partner_table():
  every_help = _flag_table()  # (flag, help) of every command: a flag's help may differ
  helps = dict(every_help)
  assert len(helps) > 100
  table = {(rule.setting, rule.partner) for rule in flags_common.PARTNERS}
  found = set()
  for flag, text in every_help:
    # An enum's help starts with its choices: <both\|float32\|...>: With --export_dir: ...
    text = re.sub(r"^<[^>]*>: ", "", text)
    said = re.match(r"(?:With|Only used if) (--[a-z_]+(?: and --[a-z_]+)*|`[a-z_]+`)", text)
    if said:
      for partner in re.findall(r"[a-z_]+", said.group(1).replace("and", " ")):
        found.add((flag, partner))
    # "--pack_sequences: the most instances ...", "--mode=feature: units of ...".
    said = re.match(r"--([a-z_]+(?:=[a-z]+)?): ", text)
    if said:
      found.add((flag, said.group(1)))
  assert found == {("litert", "export_dir"), ("export_version", "export_dir"),
                   ("eval_every_steps", "do_train"), ("eval_every_steps", "do_eval"),
                   ("num_tpu_cores", "use_tpu"), ("best_metric", "eval_every_steps"),
                   ("early_stopping_patience", "eval_every_steps"),
                   ("max_sequences_per_row", "pack_sequences"),
                   ("sentence_language", "split_sentences"),
                   ("feature_layers", "mode=feature"), ("lstm_units", "mode=feature"),
                   ("feature_learning_rate", "mode=feature"),
                   ("feature_cache_dir", "mode=feature"),
                   ("feature_batch_size", "mode=feature"), ("dropout_rate", "mode=finetune")}
  assert found <= table
  # The tsv/csv task's flags say so as "tsv/csv task: ...", XNLI's as "XNLI: ...".
  for flag, text in every_help:
    if text.startswith(("tsv/csv task: ", "XNLI: ")):
      partner = "task_name=xnli" if text.startswith("XNLI") else "task_name=tsv|csv"
      assert (flag, partner) in table, flag
  for flag, partner in table:  # each entry names flags that exist
    assert flag in helps and partner.partition("=")[0] in helps, (flag, partner)
  # A rule that only holds with a third setting names one that exists too.
  assert all(rule.only_with in helps for rule in flags_common.PARTNERS if rule.only_with)


@pytest.mark.parametrize("flag,partner,typed", [
    ("litert", "export_dir", "--litert=none"),
    ("export_version", "export_dir", "--export_version=2"),
    ("overwrite_export", "export_dir", "--overwrite_export"),
    ("eval_every_steps", "do_train", "--eval_every_steps=0"),
    ("num_tpu_cores", "use_tpu", "--num_tpu_cores=8")])
def test_a_flag_given_without_its_partner_is_refused(flag, partner, typed):
  values = flags.FlagValues()
  flags.DEFINE_string("litert", "both", "", flag_values=values)
  flags.DEFINE_string("export_dir", None, "", flag_values=values)
  flags.DEFINE_integer("export_version", 0, "", flag_values=values)
  flags.DEFINE_bool("overwrite_export", False, "", flag_values=values)
  flags.DEFINE_integer("eval_every_steps", 0, "", flag_values=values)
  flags.DEFINE_bool("do_train", False, "", flag_values=values)
  flags.DEFINE_bool("do_eval", False, "", flag_values=values)
  flags.DEFINE_integer("num_tpu_cores", 8, "", flag_values=values)
  flags.DEFINE_bool("use_tpu", False, "", flag_values=values)
  values(["prog", typed])
  what = {rule.setting: rule.what for rule in flags_common.PARTNERS}[flag]
  with pytest.raises(errors.UserError) as raised:
    flags_common.check_partners(values)
  assert str(raised.value) == (f"{typed} {what}: it needs --{partner} (without it the flag "
                               "does nothing)")
  # Given with its partner(s), or not given at all: nothing to refuse.
  values.unparse_flags()
  values(["prog", typed, "--export_dir=/tmp/e", "--do_train", "--do_eval", "--use_tpu"])
  flags_common.check_partners(values)
  values.unparse_flags()
  values(["prog"])
  flags_common.check_partners(values)


@pytest.mark.parametrize("setting,value,partners,message", [
    ("litert", "int8", {}, "--litert=int8 writes the LiteRT models of an export: it needs "
     "--export_dir (without it the flag does nothing)"),
    ("export_version", 2, {}, "--export_version=2 names the version folder of an export: "
     "it needs --export_dir (without it the flag does nothing)"),
    ("overwrite_export", True, {}, "--overwrite_export replaces part of an export: it needs "
     "--export_dir (without it the flag does nothing)"),
    ("eval_every_steps", 5, {"do_train": True}, "--eval_every_steps=5 evaluates during "
     "training: it needs --do_eval (without it the flag does nothing)"),
    ("best_metric", "eval_f1", {}, "--best_metric=eval_f1 chooses the best of the "
     "evaluations during training: it needs --eval_every_steps (without it the flag does "
     "nothing)"),
    ("use_best_checkpoint", True, {"do_train": True}, "--use_best_checkpoint with "
     "--do_train takes the best of the evaluations during training: it needs "
     "--eval_every_steps (without it no evaluation chooses one)")])
def test_the_options_are_held_to_the_same_partner_table(setting, value, partners, message):
  from bert.training import run_options  # pylint: disable=g-import-not-at-top
  with pytest.raises(errors.UserError) as raised:
    run_options.RunOptions(output_dir="/tmp/o", **{setting: value}, **partners)
  assert str(raised.value) == message
  # With its partner set, or left at its default, the setting is accepted.
  everything = {"export_dir": "/tmp/e", "do_train": True, "do_eval": True,
                "eval_every_steps": 10}
  run_options.RunOptions(output_dir="/tmp/o", **{**everything, setting: value})
  run_options.RunOptions(output_dir="/tmp/o", **partners)
  # Without --do_train, --use_best_checkpoint takes the best a run kept: no partner needed.
  run_options.RunOptions(output_dir="/tmp/o", use_best_checkpoint=True)
