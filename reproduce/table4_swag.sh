#!/usr/bin/env bash
# Table 4 of the paper: SWAG dev accuracy. The paper fine-tunes 3 epochs, batch 16,
# learning rate 2e-5 (LRS="5e-5 4e-5 3e-5 2e-5" runs the usual sweep instead).
#
#   reproduce/table4_swag.sh [--smoke] BERT_DIR SWAG_DIR [OUT_DIR]
#
# SWAG_DIR: SWAG's train.csv, val.csv (and test.csv: predictions are written for it).
# --smoke: the first rows of each file, one short epoch, seq 48.
source "$(dirname "$0")/common.sh"
TABLE=table4
(( ${#ARGS[@]} >= 2 )) || die "usage: $0 [--smoke] BERT_DIR SWAG_DIR [OUT_DIR]"
BERT_DIR="${ARGS[0]}"; SWAG_DIR="${ARGS[1]}"
need_dir "$BERT_DIR" "BERT"; need_dir "$SWAG_DIR" "SWAG"
setup_out table4_swag "${ARGS[2]:-}"
mapfile -t MODEL < <(model_flags "$BERT_DIR")

LRS="${LRS:-2e-5}"; SEEDS="${SEEDS:-1}"; EPOCHS="${EPOCHS:-3}"; BATCH="${BATCH:-16}"; SEQ=128
DATA="$SWAG_DIR"
if (( SMOKE )); then
  LRS=2e-5; SEEDS=1; EPOCHS=1; BATCH=2; SEQ=48
  DATA="$OUT/smoke_data"
  for f in "$SWAG_DIR"/*.csv; do smoke_head "$f" "$DATA/$(basename "$f")" 5; done
fi
PREDICT=()
[[ -f "$DATA/test.csv" ]] && PREDICT=(--do_predict)

for lr in $LRS; do
  for seed in $SEEDS; do
    dir="$OUT/swag/lr${lr}_seed${seed}"
    run_once "$dir/eval_results.txt" "$dir.log" -- "$PYTHON" "$REPO/run_swag.py" \
      --data_dir="$DATA" "${MODEL[@]}" --do_train --do_eval "${PREDICT[@]}" \
      --max_seq_length=$SEQ --train_batch_size=$BATCH --learning_rate=$lr \
      --num_train_epochs=$EPOCHS --seed=$seed --output_dir="$dir"
    record "BERT" "SWAG dev" "$lr" "$seed" best "$dir/eval_results.txt" eval_accuracy
  done
done
finish
