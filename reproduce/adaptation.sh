#!/usr/bin/env bash
# Adapting a pretrained BERT, measured: the figures of docs/pretraining.md's "Adapting a
# released model", each part one command at a time (each prints the command it runs).
#
#   reproduce/adaptation.sh positions [OUT_DIR]   (default out/adaptation)
#   reproduce/adaptation.sh words [OUT_DIR]
#   reproduce/adaptation.sh ner [OUT_DIR]
#   reproduce/adaptation.sh all [OUT_DIR]
#
# positions: a small model pretrained here at 512 on the Korean corpus, grown to 1024
#   positions by extend_positions.py (--new_rows=copy and random) and evaluated, before
#   any further training, on held-out records at 1024 beside the model at 512.
# words: a small model pretrained here on reuters_docs.txt with Google's uncased
#   vocabulary; the 3,000 most frequent words of its training text that the vocabulary
#   splits added by extend_vocab.py --init_checkpoint (--new_rows=mean_of_pieces and
#   random); held-out records made with the new vocabulary, evaluated before any
#   training, beside the old model on the same text with the old vocabulary.
# ner: task-adaptive pretraining (Gururangan et al. 2020) of the shared MiniLM on
#   CoNLL-2003's own training text (reuters_docs.txt: packed rows, masks drawn as it
#   trains, whole words), then run_ner.py on CoNLL-2003 from the MiniLM and from the
#   continued model, at the same fine-tuning budget, over SEEDS (default 1 2 3).
# Data: SHARED (default ../shared/data). Results: OUT/<part>/results.tsv; times (wall
# and CPU seconds) in OUT/logs/times.tsv. A step whose result exists is not run again.
source "$(dirname "$0")/common.sh"
PART="${ARGS[0]:-}"
OUT="${ARGS[1]:-$REPO/out/adaptation}"
SHARED="${SHARED:-$REPO/../shared/data}"
SEEDS="${SEEDS:-1 2 3}"
case "$PART" in positions|words|ner|all) ;; *) die "the first argument is positions, words, ner or all" ;; esac
[[ -d "$SHARED/korean" && -d "$SHARED/corpora" ]] || die "$SHARED does not hold the shared data (set SHARED)"
mkdir -p "$OUT/logs"
OUT="$(cd "$OUT" && pwd)"
TIMES="$OUT/logs/times.tsv"
touch "$TIMES"
MINILM="$SHARED/models/uncased_L-6_H-384_A-12"

# value FILE KEY: a `key = value` line of an eval_results.txt
value() { awk -v k="$2" '$1 == k { print $3 }' "$1"; }

# documents FROM TO SRC DST: documents FROM..TO (1-based, blank-line separated) of SRC
documents() {
  awk -v a="$1" -v b="$2" 'BEGIN { RS = ""; ORS = "\n\n" } NR >= a && NR <= b { print }' \
    "$3" > "$4"
}

# config PATH VOCAB_SIZE HIDDEN LAYERS HEADS INTERMEDIATE POSITIONS
config() {
  "$PYTHON" - "$@" <<'PY'
import json, sys
path, vocab, hidden, layers, heads, intermediate, positions = sys.argv[1:]
config = {"vocab_size": int(vocab), "hidden_size": int(hidden),
          "num_hidden_layers": int(layers), "num_attention_heads": int(heads),
          "intermediate_size": int(intermediate), "hidden_act": "gelu",
          "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
          "max_position_embeddings": int(positions), "type_vocab_size": 2,
          "initializer_range": 0.02}
with open(path, "w", encoding="utf-8") as f:
  json.dump(config, f, indent=2, sort_keys=True)
PY
}

# ------------------------------------------------------------------ positions (Korean)
positions() {
  local dir="$OUT/positions" corpus="$SHARED/korean/corpus/nsmc_reviews.txt"
  mkdir -p "$dir/data"
  # Training text: the first 1,500 movies; held out: movies 4,001-4,330 (documents).
  [[ -s "$dir/data/train.txt" ]] || documents 1 1500 "$corpus" "$dir/data/train.txt"
  [[ -s "$dir/data/heldout.txt" ]] || documents 4001 4330 "$corpus" "$dir/data/heldout.txt"
  step pos_vocab "$dir/vocab.txt" -- "$PYTHON" "$REPO/create_vocab.py" \
    --input_file="$dir/data/train.txt" --output_file="$dir/vocab.txt" --do_lower_case=false \
    --vocab_size=8000 --max_input_tokens=20000 --max_unique_chars=3000 --output_config_file=
  [[ -s "$dir/bert_config.json" ]] || config "$dir/bert_config.json" \
    "$(wc -l < "$dir/vocab.txt")" 128 4 4 512 512
  step pos_records_512 "$dir/train-512.tfrecord" -- "$PYTHON" "$REPO/create_pretraining_data.py" \
    --input_file="$dir/data/train.txt" --output_file="$dir/train-512.tfrecord" \
    --vocab_file="$dir/vocab.txt" --do_lower_case=false --max_seq_length=512 \
    --max_predictions_per_seq=77 --dynamic_masking --dupe_factor=1 --random_seed=12345
  for seq in 512 1024; do
    step "pos_heldout_$seq" "$dir/heldout-$seq.tfrecord" -- "$PYTHON" \
      "$REPO/create_pretraining_data.py" --input_file="$dir/data/heldout.txt" \
      --output_file="$dir/heldout-$seq.tfrecord" --vocab_file="$dir/vocab.txt" \
      --do_lower_case=false --max_seq_length="$seq" \
      --max_predictions_per_seq="$((seq * 15 / 100))" --dupe_factor=1 --random_seed=7
  done
  step pos_pretrain "$dir/pretrain/pretrained/bert_model.ckpt.index" -- "$PYTHON" \
    "$REPO/run_pretraining.py" --input_file="$dir/train-512.tfrecord" \
    --output_dir="$dir/pretrain" --bert_config_file="$dir/bert_config.json" \
    --vocab_file="$dir/vocab.txt" --do_lower_case=false --do_train \
    --train_batch_size=16 --max_seq_length=512 --max_predictions_per_seq=77 \
    --num_train_steps="${POS_STEPS:-2000}" --num_warmup_steps=300 --learning_rate=5e-4 \
    --save_checkpoints_steps=500 --log_every_steps=100 --no_nsp --no_dropout
  cp "$dir/vocab.txt" "$dir/pretrain/pretrained/vocab.txt"
  for rows in copy random; do
    step "pos_extend_$rows" "$dir/long-$rows/bert_model.ckpt.index" -- "$PYTHON" \
      "$REPO/extend_positions.py" --init_checkpoint="$dir/pretrain/pretrained/bert_model.ckpt" \
      --bert_config_file="$dir/pretrain/pretrained/bert_config.json" \
      --vocab_file="$dir/vocab.txt" --max_position_embeddings=1024 --new_rows="$rows" \
      --output_dir="$dir/long-$rows"
  done
  # eval NAME MODEL_DIR SEQ: masked-LM accuracy and loss on the held-out records at SEQ
  eval_at() {
    step "pos_eval_$1" "$dir/eval-$1/eval_results.txt" -- "$PYTHON" "$REPO/run_pretraining.py" \
      --input_file="$dir/heldout-$3.tfrecord" --output_dir="$dir/eval-$1" \
      --bert_config_file="$2/bert_config.json" --init_checkpoint="$2/bert_model.ckpt" \
      --do_eval --eval_batch_size=8 --max_eval_steps=1000 --max_seq_length="$3" \
      --max_predictions_per_seq="$(( $3 * 15 / 100 ))" --no_nsp
  }
  eval_at at512 "$dir/pretrain/pretrained" 512
  eval_at copy_at512 "$dir/long-copy" 512
  eval_at copy_at1024 "$dir/long-copy" 1024
  eval_at random_at1024 "$dir/long-random" 1024
  {
    printf 'model\tseq\tmasked_lm_accuracy\tmasked_lm_loss\n'
    for run in at512:512 copy_at512:512 copy_at1024:1024 random_at1024:1024; do
      local name="${run%%:*}" r="$dir/eval-${run%%:*}/eval_results.txt"
      printf '%s\t%s\t%s\t%s\n' "$name" "${run##*:}" "$(value "$r" masked_lm_accuracy)" \
        "$(value "$r" masked_lm_loss)"
    done
  } > "$dir/results.tsv"
  cat "$dir/results.tsv"
  # The grown models' accuracy on the masked tokens before position 512 and after it.
  [[ -s "$dir/by_position.tsv" ]] || PYTHONPATH="$REPO" "$PYTHON" \
      "$REPO/reproduce/masked_lm_split.py" positions "$dir/heldout-1024.tfrecord" 512 \
      "$dir/long-copy" "$dir/long-random" > "$dir/by_position.tsv"
  cat "$dir/by_position.tsv"
}

# ------------------------------------------------------------------ words (Reuters)
words() {
  local dir="$OUT/words" corpus="$SHARED/corpora/reuters_docs.txt"
  local vocab="$SHARED/vocab/uncased_vocab.txt"
  mkdir -p "$dir/data"
  # Training text: documents 1-850; held out: 851-946.
  [[ -s "$dir/data/train.txt" ]] || documents 1 850 "$corpus" "$dir/data/train.txt"
  [[ -s "$dir/data/heldout.txt" ]] || documents 851 946 "$corpus" "$dir/data/heldout.txt"
  [[ -s "$dir/bert_config.json" ]] || config "$dir/bert_config.json" \
    "$(wc -l < "$vocab")" 128 4 4 512 128
  step words_records "$dir/train.tfrecord" -- "$PYTHON" "$REPO/create_pretraining_data.py" \
    --input_file="$dir/data/train.txt" --output_file="$dir/train.tfrecord" \
    --vocab_file="$vocab" --max_seq_length=128 --dynamic_masking --dupe_factor=1 \
    --random_seed=12345
  step words_pretrain "$dir/pretrain/pretrained/bert_model.ckpt.index" -- "$PYTHON" \
    "$REPO/run_pretraining.py" --input_file="$dir/train.tfrecord" \
    --output_dir="$dir/pretrain" --bert_config_file="$dir/bert_config.json" \
    --vocab_file="$vocab" --do_train --train_batch_size=32 --max_seq_length=128 \
    --max_predictions_per_seq=20 --num_train_steps="${WORDS_STEPS:-2000}" \
    --num_warmup_steps=300 --learning_rate=5e-4 --save_checkpoints_steps=1000 \
    --log_every_steps=100 --no_nsp --no_dropout
  # The 3,000 most frequent words of the training text that the vocabulary splits.
  [[ -s "$dir/new_words.txt" ]] || PYTHONPATH="$REPO" "$PYTHON" - "$dir/data/train.txt" "$vocab" \
      "$dir/new_words.txt" <<'PY'
import collections, sys
from bert import tokenization
text, vocab, out = sys.argv[1:]
basic = tokenization.BasicTokenizer(do_lower_case=True)
wordpiece = tokenization.WordpieceTokenizer(tokenization.load_vocab(vocab))
counts = collections.Counter()
with open(text, encoding="utf-8") as f:
  for line in f:
    counts.update(basic.tokenize(line))
split = [w for w, _ in counts.most_common() if len(wordpiece.tokenize(w)) > 1]
with open(out, "w", encoding="utf-8") as f:
  f.write("\n".join(split[:3000]) + "\n")
PY
  for rows in mean_of_pieces random; do
    step "words_extend_$rows" "$dir/grown-$rows/bert_model.ckpt.index" -- "$PYTHON" \
      "$REPO/extend_vocab.py" --vocab_file="$vocab" --words_file="$dir/new_words.txt" \
      --init_checkpoint="$dir/pretrain/pretrained/bert_model.ckpt" \
      --bert_config_file="$dir/pretrain/pretrained/bert_config.json" \
      --output_dir="$dir/grown-$rows" --new_rows="$rows" --corpus_file="$dir/data/heldout.txt"
  done
  step words_heldout_old "$dir/heldout-old.tfrecord" -- "$PYTHON" \
    "$REPO/create_pretraining_data.py" --input_file="$dir/data/heldout.txt" \
    --output_file="$dir/heldout-old.tfrecord" --vocab_file="$vocab" --max_seq_length=128 \
    --dupe_factor=1 --random_seed=7
  step words_heldout_new "$dir/heldout-new.tfrecord" -- "$PYTHON" \
    "$REPO/create_pretraining_data.py" --input_file="$dir/data/heldout.txt" \
    --output_file="$dir/heldout-new.tfrecord" \
    --vocab_file="$dir/grown-mean_of_pieces/vocab.txt" --max_seq_length=128 \
    --dupe_factor=1 --random_seed=7
  eval_words() {  # NAME MODEL_DIR RECORDS
    step "words_eval_$1" "$dir/eval-$1/eval_results.txt" -- "$PYTHON" \
      "$REPO/run_pretraining.py" --input_file="$3" --output_dir="$dir/eval-$1" \
      --bert_config_file="$2/bert_config.json" --init_checkpoint="$2/bert_model.ckpt" \
      --do_eval --eval_batch_size=32 --max_eval_steps=1000 --max_seq_length=128 \
      --max_predictions_per_seq=20 --no_nsp
  }
  eval_words old "$dir/pretrain/pretrained" "$dir/heldout-old.tfrecord"
  eval_words mean_of_pieces "$dir/grown-mean_of_pieces" "$dir/heldout-new.tfrecord"
  eval_words random "$dir/grown-random" "$dir/heldout-new.tfrecord"
  {
    printf 'model\tvocabulary\tmasked_lm_loss\tmasked_lm_accuracy\n'
    for name in old mean_of_pieces random; do
      local r="$dir/eval-$name/eval_results.txt" v=new
      [[ "$name" == old ]] && v=old
      printf '%s\t%s\t%s\t%s\n' "$name" "$v" "$(value "$r" masked_lm_loss)" \
        "$(value "$r" masked_lm_accuracy)"
    done
  } > "$dir/results.tsv"
  cat "$dir/results.tsv"
  # The grown models' loss on the masked new words and on the other masked tokens, and
  # the probability they give the new words.
  [[ -s "$dir/by_target.tsv" ]] || PYTHONPATH="$REPO" "$PYTHON" \
      "$REPO/reproduce/masked_lm_split.py" targets "$dir/heldout-new.tfrecord" "$vocab" \
      "$dir/grown-mean_of_pieces" "$dir/grown-random" > "$dir/by_target.tsv"
  cat "$dir/by_target.tsv"
}

# ------------------------------------------------------------------ ner (CoNLL-2003)
ner() {
  local dir="$OUT/ner" corpus="$SHARED/corpora/reuters_docs.txt"
  mkdir -p "$dir"
  step ner_records "$dir/reuters.tfrecord" -- "$PYTHON" "$REPO/create_pretraining_data.py" \
    --input_file="$corpus" --output_file="$dir/reuters.tfrecord" \
    --vocab_file="$MINILM/vocab.txt" --max_seq_length=128 --pack_sequences \
    --dynamic_masking --dupe_factor=1 --random_seed=12345
  step ner_tapt "$dir/tapt/pretrained/bert_model.ckpt.index" -- "$PYTHON" \
    "$REPO/run_pretraining.py" --input_file="$dir/reuters.tfrecord" \
    --output_dir="$dir/tapt" --bert_config_file="$MINILM/bert_config.json" \
    --init_checkpoint="$MINILM/bert_model.ckpt" --vocab_file="$MINILM/vocab.txt" \
    --do_train --train_batch_size=32 --max_seq_length=128 --max_predictions_per_seq=20 \
    --do_whole_word_mask --num_train_steps="${TAPT_STEPS:-300}" --num_warmup_steps="$(( ${TAPT_STEPS:-300} / 10 ))" \
    --learning_rate=1e-4 --save_checkpoints_steps=200 --log_every_steps=50 --no_nsp
  cp "$MINILM/vocab.txt" "$dir/tapt/pretrained/vocab.txt"
  local start
  for start in minilm tapt; do
    local init="$MINILM/bert_model.ckpt"
    [[ "$start" == tapt ]] && init="$dir/tapt/pretrained/bert_model.ckpt"
    for seed in $SEEDS; do
      step "ner_${start}_seed$seed" "$dir/$start-seed$seed/eval_results.txt" -- "$PYTHON" \
        "$REPO/run_ner.py" --data_dir="$SHARED/conll2003" --vocab_file="$MINILM/vocab.txt" \
        --bert_config_file="$MINILM/bert_config.json" --init_checkpoint="$init" \
        --do_train --do_eval --max_seq_length=64 --train_batch_size=32 \
        --num_train_steps="${NER_STEPS:-300}" --learning_rate=1e-4 --seed="$seed" \
        --eval_batch_size=64 --output_dir="$dir/$start-seed$seed"
    done
  done
  {
    printf 'start\tseed\tdev_f1\n'
    for start in minilm tapt; do
      for seed in $SEEDS; do
        printf '%s\t%s\t%s\n' "$start" "$seed" \
          "$(value "$dir/$start-seed$seed/eval_results.txt" eval_f1)"
      done
    done
  } > "$dir/results.tsv"
  cat "$dir/results.tsv"
}

case "$PART" in
  positions) positions ;;
  words) words ;;
  ner) ner ;;
  all) positions; words; ner ;;
esac
