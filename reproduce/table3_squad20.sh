#!/usr/bin/env bash
# Table 3 of the paper: SQuAD v2.0 dev EM/F1. The paper fine-tunes 2 epochs at batch 48,
# learning rate 5e-5; the sweep covers 5e-5 4e-5 3e-5 2e-5. The no-answer threshold is
# chosen on dev (best_f1 / best_exact of the official v2.0 evaluation, from null_odds).
#
#   reproduce/table3_squad20.sh [--smoke] BERT_DIR SQUAD_DIR [OUT_DIR]
#
# SQUAD_DIR: train-v2.0.json and dev-v2.0.json (--smoke also takes dev-v2.0-normans.json
# alone: it trains on 8 of its questions and predicts 8 others).
source "$(dirname "$0")/common.sh"
TABLE=table3
(( ${#ARGS[@]} >= 2 )) || die "usage: $0 [--smoke] BERT_DIR SQUAD_DIR [OUT_DIR]"
BERT_DIR="${ARGS[0]}"; SQUAD_DIR="${ARGS[1]}"
need_dir "$BERT_DIR" "BERT"; need_dir "$SQUAD_DIR" "SQuAD"
setup_out table3_squad20 "${ARGS[2]:-}"
mapfile -t MODEL < <(model_flags "$BERT_DIR")

LRS="${LRS:-5e-5 4e-5 3e-5 2e-5}"; SEEDS="${SEEDS:-1}"
EPOCHS="${EPOCHS:-2}"; BATCH="${BATCH:-48}"
TRAIN="$SQUAD_DIR/train-v2.0.json"; DEV="$SQUAD_DIR/dev-v2.0.json"
EXTRA=(--max_seq_length=384 --doc_stride=128)
if (( SMOKE )); then
  LRS=5e-5; SEEDS=1; EPOCHS=1; BATCH=4
  [[ -f "$DEV" ]] || DEV="$SQUAD_DIR/dev-v2.0-normans.json"
  [[ -f "$TRAIN" ]] || TRAIN="$DEV"
  EXTRA=(--max_seq_length=64 --doc_stride=32 --max_query_length=16 --max_train_examples=8
         --max_predict_examples=8)
fi
[[ -f "$TRAIN" ]] || die "$TRAIN does not exist"
[[ -f "$DEV" ]] || die "$DEV does not exist"

for lr in $LRS; do
  for seed in $SEEDS; do
    dir="$OUT/squad20/lr${lr}_seed${seed}"
    run_once "$dir/eval_results.txt" "$dir.log" -- "$PYTHON" "$REPO/run_squad.py" \
      "${MODEL[@]}" --version_2_with_negative --do_train --train_file="$TRAIN" \
      --do_predict --predict_file="$DEV" --train_batch_size=$BATCH --learning_rate=$lr \
      --num_train_epochs=$EPOCHS --seed=$seed "${EXTRA[@]}" --output_dir="$dir"
    record "BERT" "SQuAD 2.0 F1" "$lr" "$seed" best "$dir/eval_results.txt" best_f1
    record "BERT" "SQuAD 2.0 EM" "$lr" "$seed" best "$dir/eval_results.txt" best_exact
  done
done
finish
