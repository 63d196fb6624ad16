#!/usr/bin/env bash
# Table 5 of the paper: pre-training task ablations. Pretrains three models of the same
# size from scratch on CORPUS (masked LM + next sentence; --no_nsp; --ltr: left-to-right LM
# without NSP), then fine-tunes each on MNLI, QNLI, MRPC, SST-2 (dev accuracy) and SQuAD
# 1.1 (dev F1), the LTR model with the causal mask (--ltr) in fine-tuning too.
#
#   reproduce/table5_ablations.sh [--smoke] BERT_DIR CORPUS GLUE_DIR [SQUAD_DIR] [OUT_DIR]
#
# BERT_DIR gives the vocabulary and the architecture (bert_config.json; its weights are
# not used). CORPUS: one sentence a line, blank lines between documents. The paper's
# "+ BiLSTM" row is not reproduced. A fine-tuning script without --ltr skips the LTR row.
# --smoke: a 2-layer hidden-32 model, 3 pretraining steps, MRPC only (TASKS to change).
source "$(dirname "$0")/common.sh"
TABLE=table5
(( ${#ARGS[@]} >= 3 )) || die "usage: $0 [--smoke] BERT_DIR CORPUS GLUE_DIR [SQUAD_DIR] [OUT_DIR]"
BERT_DIR="${ARGS[0]}"; CORPUS="${ARGS[1]}"; GLUE_DIR="${ARGS[2]}"; SQUAD_DIR="${ARGS[3]:-}"
need_dir "$BERT_DIR" "BERT"; need_dir "$GLUE_DIR" "GLUE"
[[ -f "$CORPUS" ]] || die "corpus '$CORPUS' does not exist"
# An OUT_DIR given in SQUAD_DIR's place would silently drop the SQuAD column and write
# the runs to the default folder.
if [[ -n "$SQUAD_DIR" && ! -f "$SQUAD_DIR/train-v1.1.json" ]]; then
  die "SQUAD_DIR '$SQUAD_DIR' has no train-v1.1.json (without SQuAD, pass '' as SQUAD_DIR before OUT_DIR)"
fi
setup_out table5_ablations "${ARGS[4]:-}"
vocab_settings "$BERT_DIR"; pretrain_settings

LRS="${LRS:-5e-5 4e-5 3e-5 2e-5}"; SEEDS="${SEEDS:-1}"; SELECT=best
EPOCHS="${EPOCHS:-3}"; BATCH="${BATCH:-32}"; SEQ=128
TASKS="${TASKS:-MNLI QNLI MRPC SST-2}"
if (( SMOKE )); then
  LRS=5e-5; SEEDS=1; EPOCHS=1; BATCH=8; SEQ=32; TASKS="${TASKS_SMOKE:-MRPC}"; SQUAD_DIR=""
fi

make_config "$BERT_DIR/bert_config.json" "$OUT/bert_config.json"
RECORD="$(pretraining_data all "$CORPUS")"
declare -A PRETRAIN_FLAGS=([BERT]="" ["No NSP"]="--no_nsp" ["LTR & No NSP"]="--ltr")
for row in "BERT" "No NSP" "LTR & No NSP"; do
  echo "== pretraining: $row"
  name="${row//[^A-Za-z0-9]/_}"
  # shellcheck disable=SC2086
  pretrain "$name" "$OUT/bert_config.json" "$RECORD" ${PRETRAIN_FLAGS[$row]}
  model_dir="$OUT/pretrain/$name/pretrained"
  ltr=()
  if [[ "$row" == LTR* ]]; then ltr=(--ltr); fi
  if (( ${#ltr[@]} )) && ! has_flag run_classifier.py ltr; then
    echo "skipping GLUE for $row: run_classifier.py has no --ltr"
  else
    for task in $TASKS; do
      column="$task"; [[ "$task" == MNLI ]] && column="MNLI-m"
      finetune_glue "$row" "$column" "$task" "$model_dir" "${ltr[@]}"
    done
  fi
  if [[ -n "$SQUAD_DIR" ]]; then
    if (( ${#ltr[@]} )) && ! has_flag run_squad.py ltr; then
      echo "skipping SQuAD for $row: run_squad.py has no --ltr"; continue
    fi
    mapfile -t model < <(model_flags "$model_dir")
    for lr in $LRS; do
      dir="$OUT/finetune/$name/squad11/lr${lr}_seed1"
      run_once "$dir/eval_results.txt" "$dir.log" -- "$PYTHON" "$REPO/run_squad.py" \
        "${model[@]}" "${ltr[@]}" --do_train --train_file="$SQUAD_DIR/train-v1.1.json" \
        --do_predict --predict_file="$SQUAD_DIR/dev-v1.1.json" --train_batch_size=32 \
        --learning_rate=$lr --num_train_epochs=2 --output_dir="$dir" || continue
      record "$row" "SQuAD 1.1 F1" "$lr" 1 best "$dir/eval_results.txt" f1
    done
  fi
done
finish
