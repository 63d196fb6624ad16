#!/usr/bin/env bash
# Table 2 of the paper: SQuAD v1.1 dev EM/F1. The paper fine-tunes 3 epochs at batch 32;
# the sweep covers learning rates 5e-5 4e-5 3e-5 2e-5 (best dev F1 kept).
#
#   reproduce/table2_squad11.sh [--smoke] BERT_DIR SQUAD_DIR [OUT_DIR]
#
# SQUAD_DIR: train-v1.1.json and dev-v1.1.json. --smoke: trains on 8 questions of the
# first article (of train-v1.1.json, or dev-v1.1.json when there is no train file) and
# predicts 8 questions of the next article, seq 64, one step per few questions.
source "$(dirname "$0")/common.sh"
TABLE=table2
(( ${#ARGS[@]} >= 2 )) || die "usage: $0 [--smoke] BERT_DIR SQUAD_DIR [OUT_DIR]"
BERT_DIR="${ARGS[0]}"; SQUAD_DIR="${ARGS[1]}"
need_dir "$BERT_DIR" "BERT"; need_dir "$SQUAD_DIR" "SQuAD"
setup_out table2_squad11 "${ARGS[2]:-}"
mapfile -t MODEL < <(model_flags "$BERT_DIR")

LRS="${LRS:-5e-5 4e-5 3e-5 2e-5}"; SEEDS="${SEEDS:-1}"
EPOCHS="${EPOCHS:-3}"; BATCH="${BATCH:-32}"
TRAIN="$SQUAD_DIR/train-v1.1.json"; DEV="$SQUAD_DIR/dev-v1.1.json"
EXTRA=(--max_seq_length=384 --doc_stride=128)
if (( SMOKE )); then
  LRS=5e-5; SEEDS=1; EPOCHS=1; BATCH=4
  [[ -f "$TRAIN" ]] || TRAIN="$DEV"
  EXTRA=(--max_seq_length=64 --doc_stride=32 --max_query_length=16 --train_articles=0:1 --predict_articles=1:2
         --max_train_examples=8 --max_predict_examples=8)
fi
[[ -f "$TRAIN" ]] || die "$TRAIN does not exist"
[[ -f "$DEV" ]] || die "$DEV does not exist"

for lr in $LRS; do
  for seed in $SEEDS; do
    dir="$OUT/squad11/lr${lr}_seed${seed}"
    run_once "$dir/eval_results.txt" "$dir.log" -- "$PYTHON" "$REPO/run_squad.py" \
      "${MODEL[@]}" --do_train --train_file="$TRAIN" --do_predict --predict_file="$DEV" \
      --train_batch_size=$BATCH --learning_rate=$lr --num_train_epochs=$EPOCHS \
      --seed=$seed "${EXTRA[@]}" --output_dir="$dir"
    record "BERT" "SQuAD 1.1 F1" "$lr" "$seed" best "$dir/eval_results.txt" f1
    record "BERT" "SQuAD 1.1 EM" "$lr" "$seed" best "$dir/eval_results.txt" exact_match
  done
done
finish
