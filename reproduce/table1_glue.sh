#!/usr/bin/env bash
# Table 1 of the paper: GLUE. Fine-tunes BERT on each GLUE task with the paper's sweep
# (batch 32, 3 epochs, learning rates 5e-5 4e-5 3e-5 2e-5, best on dev) and reports the
# dev scores beside the paper's (test-server) numbers.
#
#   reproduce/table1_glue.sh [--smoke] BERT_DIR GLUE_DIR [OUT_DIR]
#
# BERT_DIR: bert_config.json, vocab.txt, bert_model.ckpt.*. GLUE_DIR: one folder per task
# as GLUE distributes them (MNLI QQP QNLI SST-2 CoLA STS-B MRPC RTE; missing ones are
# skipped). Metrics as the paper: F1 for QQP and MRPC, Spearman for STS-B, Matthews
# correlation for CoLA, accuracy for the others. SEEDS="1 2 3 4 5" adds random restarts
# (best dev run kept, as the paper did for BERT-Large). TASKS="MRPC RTE" limits the tasks.
# --smoke: the first rows of each file, one learning rate, one short epoch, seq 32.
source "$(dirname "$0")/common.sh"
TABLE=table1
(( ${#ARGS[@]} >= 2 )) || die "usage: $0 [--smoke] BERT_DIR GLUE_DIR [OUT_DIR]"
BERT_DIR="${ARGS[0]}"; GLUE_DIR="${ARGS[1]}"
need_dir "$BERT_DIR" "BERT"; need_dir "$GLUE_DIR" "GLUE"
setup_out table1_glue "${ARGS[2]:-}"
mapfile -t MODEL < <(model_flags "$BERT_DIR")

LRS="${LRS:-5e-5 4e-5 3e-5 2e-5}"; SEEDS="${SEEDS:-1}"
EPOCHS="${EPOCHS:-3}"; BATCH="${BATCH:-32}"; SEQ=128
TASKS="${TASKS:-MNLI QQP QNLI SST-2 CoLA STS-B MRPC RTE}"
if (( SMOKE )); then
  LRS="${SMOKE_LRS:-5e-5}"; SEEDS=1; EPOCHS=1; BATCH=8; SEQ=32
fi

declare -A NAME=([MNLI]=mnli [QQP]=qqp [QNLI]=qnli [SST-2]=sst2 [CoLA]=cola [STS-B]=stsb
                 [MRPC]=mrpc [RTE]=rte)
declare -A KEY=([MNLI]=eval_accuracy [QQP]=eval_f1 [QNLI]=eval_accuracy
                [SST-2]=eval_accuracy [CoLA]=eval_matthews_corrcoef [STS-B]=eval_spearman
                [MRPC]=eval_f1 [RTE]=eval_accuracy)

for task in $TASKS; do
  [[ -n "${NAME[$task]:-}" ]] || die "unknown GLUE task '$task' (use ${!NAME[*]})"
  data="$GLUE_DIR/$task"
  if [[ ! -d "$data" ]]; then echo "skipping $task: no $data"; continue; fi
  if (( SMOKE )); then
    small="$OUT/smoke_data/$task"
    for f in "$data"/*.tsv; do smoke_head "$f" "$small/$(basename "$f")" 25; done
    data="$small"
  fi
  echo "== $task"
  for lr in $LRS; do
    for seed in $SEEDS; do
      dir="$OUT/$task/lr${lr}_seed${seed}"
      run_once "$dir/eval_results.txt" "$dir.log" -- "$PYTHON" "$REPO/run_classifier.py" \
        --task_name="${NAME[$task]}" --data_dir="$data" "${MODEL[@]}" --do_train --do_eval \
        --max_seq_length=$SEQ --train_batch_size=$BATCH --learning_rate=$lr \
        --num_train_epochs=$EPOCHS --seed=$seed --output_dir="$dir"
      record "BERT" "$task" "$lr" "$seed" best "$dir/eval_results.txt" "${KEY[$task]}"
    done
  done
done
finish
