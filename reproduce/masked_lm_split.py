"""Masked-LM figures of docs/pretraining.md's adaptation section, split two ways, read from
held-out pretraining records through each model's masked-LM head (reproduce/adaptation.sh):

  masked_lm_split.py positions RECORDS CUT MODEL_DIR...   accuracy before and after CUT
  masked_lm_split.py targets RECORDS OLD_VOCAB MODEL_DIR...  loss on the new words and on
      the rest, and the probability the model gives the new words

MODEL_DIR holds bert_config.json, bert_model.ckpt (and vocab.txt for `targets`). Prints a
TSV table."""
import sys

import numpy as np
import tensorflow as tf

from bert import heads
from bert import tokenization
from bert.training import checkpoints
from bert.training import model_config

_INPUTS = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")


def batches(records, batch_size=32):
  """The records' masked-LM features (create_pretraining_data.py's layout, lengths read
  from the first record), batched."""
  first = tf.train.Example.FromString(next(iter(tf.data.TFRecordDataset(records))).numpy())
  spec = {name: tf.io.FixedLenFeature([len(feature.int64_list.value)], tf.int64)
          for name, feature in first.features.feature.items()
          if name in _INPUTS + ("masked_lm_ids",)}
  spec["masked_lm_weights"] = tf.io.FixedLenFeature(
      [len(first.features.feature["masked_lm_weights"].float_list.value)], tf.float32)
  return tf.data.TFRecordDataset(records).map(
      lambda r: {k: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v
                 for k, v in tf.io.parse_single_example(r, spec).items()}).batch(batch_size)


def masked_lm(model_dir):
  model, _ = heads.build_pretraining_model(
      model_config.load_bert_config(f"{model_dir}/bert_config.json"), use_next_sentence=False)
  checkpoints.load_checkpoint(model, f"{model_dir}/bert_model.ckpt")
  return model


def predictions(model, data):
  """(log-probabilities [batch, P, vocab], target ids, real-mask, positions) per batch."""
  for batch in data:
    logits = model({k: batch[k] for k in _INPUTS})["masked_lm_logits"]
    yield (tf.nn.log_softmax(tf.cast(logits, tf.float64)).numpy(),
           batch["masked_lm_ids"].numpy(), batch["masked_lm_weights"].numpy() > 0,
           batch["masked_lm_positions"].numpy())


def by_position(records, cut, model_dirs):
  print("model\tpositions\tmasked_tokens\tmasked_lm_accuracy")
  for model_dir in model_dirs:
    counts = {"before": [0, 0], "after": [0, 0]}
    for logp, ids, real, where in predictions(masked_lm(model_dir), batches(records)):
      hits = logp.argmax(-1) == ids
      for side, chosen in (("before", real & (where < cut)), ("after", real & (where >= cut))):
        counts[side][0] += int(hits[chosen].sum())
        counts[side][1] += int(chosen.sum())
    for side, (hit, total) in counts.items():
      span = f"0-{cut - 1}" if side == "before" else f"{cut}-"
      print(f"{model_dir.rsplit('/', 1)[-1]}\t{span}\t{total}\t{hit / max(total, 1):.4f}")


def by_target(records, old_vocab, model_dirs):
  old = tokenization.load_vocab(old_vocab)
  print("model\tmasked_new_words\tloss_on_them\tother_masked_tokens\tloss_on_them\t"
        "probability_on_new_words")
  for model_dir in model_dirs:
    # A new word: an entry that was not in the old vocabulary (a slot's or an appended one).
    new = np.array([token not in old for token in tokenization.load_vocab(
        f"{model_dir}/vocab.txt")])
    loss, count, mass = {True: 0.0, False: 0.0}, {True: 0, False: 0}, []
    for logp, ids, real, _ in predictions(masked_lm(model_dir), batches(records)):
      for i, j in zip(*np.nonzero(real)):
        is_new = bool(new[ids[i, j]])
        loss[is_new] -= logp[i, j, ids[i, j]]
        count[is_new] += 1
        mass.append(np.exp(logp[i, j, new]).sum())
    print(f"{model_dir.rsplit('/', 1)[-1]}\t{count[True]}\t"
          f"{loss[True] / max(count[True], 1):.4f}\t{count[False]}\t"
          f"{loss[False] / max(count[False], 1):.4f}\t{np.mean(mass):.4f}")


def main(argv):
  if len(argv) < 4 or argv[0] not in ("positions", "targets"):
    sys.stderr.write("masked_lm_split.py: error: usage: masked_lm_split.py positions RECORDS "
                     "CUT MODEL_DIR... | targets RECORDS OLD_VOCAB MODEL_DIR...\n")
    return 2
  if argv[0] == "positions":
    by_position(argv[1], int(argv[2]), argv[3:])
  else:
    by_target(argv[1], argv[2], argv[3:])
  return 0


if __name__ == "__main__":
  sys.exit(main(sys.argv[1:]))
