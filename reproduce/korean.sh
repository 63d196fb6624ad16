#!/usr/bin/env bash
# Korean end to end: from raw text to a fine-tuned, exported model in one command.
#
#   reproduce/korean.sh [OUT_DIR]          (default out/korean)
#   QUICK=1 reproduce/korean.sh [OUT_DIR]  the same road on subsets with a smaller model
#
# Steps (each prints the command it runs; docs/new_language.md explains the choices):
#   1. a cased WordPiece vocabulary learned from the Korean corpus (create_vocab.py);
#   2. masked-LM / next-sentence TFRecords (create_pretraining_data.py), whose corpus
#      check must print no warning on this clean, cased corpus;
#   3. a small BERT pretrained from scratch (run_pretraining.py);
#   4. NSMC (sentiment), KorSTS (similarity, Pearson/Spearman) and the Korean XNLI set
#      (inference), each fine-tuned and evaluated twice with the same recipe: from the
#      pretrained checkpoint and from random initialisation (run_classifier.py --task_name=tsv);
#   5. the NSMC classifier exported with its raw-text signature to OUT/nsmc/export, and
#      queried with raw Korean text from a fresh process that imports only tensorflow and
#      tensorflow_text;
#   6. OUT/results.md: scores, times and the pretraining's final MLM/NSP accuracy.
# Data: KOREAN_DATA (default ../shared/data/korean, see its README). The Korean XNLI set
# is one file (KorNLI's xnli.dev.ko.tsv); it is split here, deterministically, every 5th
# row to dev and the rest to train (OUT/data/xnli). Test splits are not shipped: the
# scores are dev scores. A step whose result exists is not run again (delete OUT to
# start over). Pretraining follows the short-budget recipe of docs/new_language.md,
# which also gives the measured times. KOREAN_SETTINGS_ONLY=1 prints the mode's settings
# and stops.
source "$(dirname "$0")/common.sh"
QUICK="${QUICK:-0}"
if (( SMOKE )); then QUICK=1; fi
DATA="${KOREAN_DATA:-$REPO/../shared/data/korean}"
OUT="${ARGS[0]:-$REPO/out/korean}"

if (( QUICK )); then
  MODE=QUICK
  CORPUS_DOCS=400        # of 4,330 movies (documents) in the corpus
  VOCAB_SIZE=8000; VOCAB_WORDS=20000
  SEQ=64; MAX_PRED=10; DUPE=10
  HIDDEN=128; LAYERS=2; HEADS=2; INTERMEDIATE=512
  # QUICK is the road's quick look, meant to end within 12 minutes on an idle 2-core
  # machine, a slow one included (a Xeon without XLA takes about twice this machine's
  # step): 2,000 steps; full mode shows what longer pretraining gains.
  PRETRAIN_STEPS=2000; PRETRAIN_BATCH=64; PRETRAIN_LR=5e-4
  NSMC_TRAIN_EVERY=20; NSMC_DEV_EVERY=5      # 3,000 of 60,000 train rows; 1,000 of 5,000 dev
  STS_TRAIN_EVERY=2; STS_DEV_EVERY=3         # 2,875 of 5,749; 500 of 1,500
  XNLI_TRAIN_EVERY=1                          # all 1,992 train rows of the split
  FT_EPOCHS=2; FT_BATCH=32; FT_LR=3e-4
  # The wait, as measured on an idle 2-core machine (docs/new_language.md says where).
  EXPECTED="about 7 minutes on an idle 2-core AMD EPYC (Zen 4; 7 min 1 s measured)"
else
  MODE=full
  CORPUS_DOCS=0          # all
  VOCAB_SIZE=16000; VOCAB_WORDS=60000
  SEQ=64; MAX_PRED=10; DUPE=10
  HIDDEN=128; LAYERS=4; HEADS=4; INTERMEDIATE=512
  PRETRAIN_STEPS=16000; PRETRAIN_BATCH=64; PRETRAIN_LR=5e-4   # about 43 of the 60 minutes
  NSMC_TRAIN_EVERY=10; NSMC_DEV_EVERY=2      # 6,000 train rows; 2,500 dev
  STS_TRAIN_EVERY=2; STS_DEV_EVERY=1         # 2,875 train rows; all 1,500 dev
  XNLI_TRAIN_EVERY=1
  FT_EPOCHS=3; FT_BATCH=32; FT_LR=3e-4
  EXPECTED="about 46 minutes on an idle 2-core AMD EPYC (Zen 5)"
fi
SETTINGS=(MODE CORPUS_DOCS VOCAB_SIZE VOCAB_WORDS SEQ MAX_PRED DUPE HIDDEN LAYERS HEADS
          INTERMEDIATE PRETRAIN_STEPS PRETRAIN_BATCH PRETRAIN_LR NSMC_TRAIN_EVERY
          NSMC_DEV_EVERY STS_TRAIN_EVERY STS_DEV_EVERY XNLI_TRAIN_EVERY FT_EPOCHS FT_BATCH
          FT_LR EXPECTED)
if [[ "${KOREAN_SETTINGS_ONLY:-0}" == 1 ]]; then  # the settings of this mode, then stop
  for name in "${SETTINGS[@]}"; do echo "$name=${!name}"; done
  exit 0
fi
for f in corpus/nsmc_reviews.txt nsmc/train.tsv nsmc/dev.tsv korsts/sts-train.tsv \
         korsts/sts-dev.tsv kornli/xnli.dev.ko.tsv; do
  [[ -f "$DATA/$f" ]] || die "$DATA/$f does not exist (set KOREAN_DATA to the folder of ../shared/data/korean)"
done
mkdir -p "$OUT/logs" "$OUT/data"
OUT="$(cd "$OUT" && pwd)"
echo "$(basename "$0"): $MODE mode, expected to take $EXPECTED; outputs in $OUT"
TIMES="$OUT/logs/times.tsv"
touch "$TIMES"

# every_nth SRC DST N: the header and every N-th data row (deterministic subsets).
every_nth() {
  awk -v n="$3" 'NR == 1 || (NR - 2) % n == 0' "$1" > "$2"
}

# ------------------------------------------------------------------ data
echo
echo "=== Data (from $DATA)"
CORPUS="$OUT/data/corpus.txt"
if [[ ! -s "$CORPUS" ]]; then
  if (( CORPUS_DOCS > 0 )); then
    awk -v docs="$CORPUS_DOCS" 'BEGIN { RS = ""; ORS = "\n\n" } NR <= docs { print }' \
      "$DATA/corpus/nsmc_reviews.txt" > "$CORPUS"
  else
    cp "$DATA/corpus/nsmc_reviews.txt" "$CORPUS"
  fi
fi
mkdir -p "$OUT/data/nsmc" "$OUT/data/korsts" "$OUT/data/xnli"
every_nth "$DATA/nsmc/train.tsv" "$OUT/data/nsmc/train.tsv" "$NSMC_TRAIN_EVERY"
every_nth "$DATA/nsmc/dev.tsv" "$OUT/data/nsmc/dev.tsv" "$NSMC_DEV_EVERY"
every_nth "$DATA/korsts/sts-train.tsv" "$OUT/data/korsts/train.tsv" "$STS_TRAIN_EVERY"
every_nth "$DATA/korsts/sts-dev.tsv" "$OUT/data/korsts/dev.tsv" "$STS_DEV_EVERY"
# The Korean XNLI set is a single file: every 5th row is dev, the others train.
awk 'NR == 1 || (NR - 2) % 5 == 0' "$DATA/kornli/xnli.dev.ko.tsv" > "$OUT/data/xnli/dev.tsv"
awk 'NR == 1 || (NR - 2) % 5 != 0' "$DATA/kornli/xnli.dev.ko.tsv" > "$OUT/data/xnli/all_train.tsv"
every_nth "$OUT/data/xnli/all_train.tsv" "$OUT/data/xnli/train.tsv" "$XNLI_TRAIN_EVERY"
rm "$OUT/data/xnli/all_train.tsv"
for f in "$CORPUS" "$OUT"/data/*/*.tsv; do
  printf '  %-40s %8d lines\n' "${f#$OUT/}" "$(wc -l < "$f")"
done

# ------------------------------------------------------------------ vocabulary
VOCAB="$OUT/vocab/vocab.txt"
step create_vocab "$VOCAB" -- "$PYTHON" "$REPO/create_vocab.py" \
  --input_file="$CORPUS" --output_file="$VOCAB" --do_lower_case=false \
  --vocab_size="$VOCAB_SIZE" --max_input_tokens="$VOCAB_WORDS" --max_unique_chars=3000 \
  --output_config_file=

# ------------------------------------------------------------------ pretraining data
CONFIG="$OUT/bert_config.json"
"$PYTHON" - "$CONFIG" "$(wc -l < "$VOCAB")" "$HIDDEN" "$LAYERS" "$HEADS" "$INTERMEDIATE" "$SEQ" <<'PY'
import json, sys
path, vocab, hidden, layers, heads, intermediate, seq = sys.argv[1:]
config = {"vocab_size": int(vocab), "hidden_size": int(hidden),
          "num_hidden_layers": int(layers), "num_attention_heads": int(heads),
          "intermediate_size": int(intermediate), "hidden_act": "gelu",
          "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1,
          "max_position_embeddings": max(128, int(seq)), "type_vocab_size": 2,
          "initializer_range": 0.02}
with open(path, "w", encoding="utf-8") as f:
  json.dump(config, f, indent=2, sort_keys=True)
PY
RECORDS="$OUT/pretraining.tfrecord"
step create_pretraining_data "$RECORDS" -- "$PYTHON" "$REPO/create_pretraining_data.py" \
  --input_file="$CORPUS" --output_file="$RECORDS" --vocab_file="$VOCAB" \
  --do_lower_case=false --max_seq_length="$SEQ" --max_predictions_per_seq="$MAX_PRED" \
  --dupe_factor="$DUPE" --random_seed=12345
if grep -q "\] WARNING: " "$OUT/logs/create_pretraining_data.log"; then
  echo "note: the corpus check warned (see above)"
fi

# ------------------------------------------------------------------ pretraining
PRETRAIN="$OUT/pretrain"
step run_pretraining "$PRETRAIN/pretrained/bert_model.ckpt.index" -- \
  "$PYTHON" "$REPO/run_pretraining.py" --input_file="$RECORDS" --output_dir="$PRETRAIN" \
  --bert_config_file="$CONFIG" --do_train=true --do_eval=true \
  --train_batch_size="$PRETRAIN_BATCH" --max_seq_length="$SEQ" \
  --max_predictions_per_seq="$MAX_PRED" --num_train_steps="$PRETRAIN_STEPS" \
  --num_warmup_steps="$((PRETRAIN_STEPS / 10))" --learning_rate="$PRETRAIN_LR" \
  --max_eval_steps=20 --save_checkpoints_steps=1000 --log_every_steps=100 \
  --no_nsp --no_dropout
# The short-budget recipe (docs/new_language.md, "The recipe"): no next-sentence loss, no
# dropout while pretraining (the config keeps 0.1 for fine-tuning), peak rate 5e-4 (1e-3
# stalls at the unigram plateau), batch 64, ten maskings of the corpus (--dupe_factor).
# No --enable_xla: run_pretraining and run_classifier take XLA (and report the choice)
# from docs/cpu.md's table for the CPU at hand; it halves this step on some CPUs.
# (an interrupted pretraining resumes from its last checkpoint when the script runs again)

# ------------------------------------------------------------------ fine-tuning
# finetune TASK INIT [run_classifier flags...]: INIT is pretrained or random.
finetune() {
  local task="$1" init="$2"; shift 2
  local dir="$OUT/$task/$init" init_flags=()
  if [[ "$init" == pretrained ]]; then
    init_flags=(--init_checkpoint="$PRETRAIN/pretrained/bert_model.ckpt")
  fi
  step "${task}_$init" "$dir/eval_results.txt" -- "$PYTHON" "$REPO/run_classifier.py" \
    --task_name=tsv --data_dir="$OUT/data/$task" --has_header=true \
    --vocab_file="$VOCAB" --do_lower_case=false --bert_config_file="$CONFIG" \
    "${init_flags[@]}" --do_train=true --do_eval=true --max_seq_length="$SEQ" \
    --train_batch_size="$FT_BATCH" --eval_batch_size=64 --learning_rate="$FT_LR" \
    --num_train_epochs="$FT_EPOCHS" --seed=1 --output_dir="$dir" "$@"
}
NSMC_FLAGS=(--text_a_column=document --label_column=label)
STS_FLAGS=(--text_a_column=sentence1 --text_b_column=sentence2 --label_column=score --regression=true)
XNLI_FLAGS=(--text_a_column=sentence1 --text_b_column=sentence2 --label_column=gold_label)
finetune nsmc pretrained "${NSMC_FLAGS[@]}" --export_dir="$OUT/nsmc/export"
finetune nsmc random "${NSMC_FLAGS[@]}"
finetune korsts pretrained "${STS_FLAGS[@]}"
finetune korsts random "${STS_FLAGS[@]}"
finetune xnli pretrained "${XNLI_FLAGS[@]}"
finetune xnli random "${XNLI_FLAGS[@]}"

# ------------------------------------------------------------------ exported model
echo
echo "=== Raw Korean text through the exported NSMC model, in a fresh process (imports only tensorflow and tensorflow_text)"
QUERY='
import json, sys
import tensorflow as tf
import tensorflow_text  # registers the tokenizer ops of the SavedModel
ours = sorted(m for m in sys.modules if m.split(".")[0] in
              {"tokenization", "modeling", "export", "run_classifier", "classifier_examples"})
assert not ours, ours
serve = tf.saved_model.load(sys.argv[1]).signatures["serve_text"]
queries = json.loads(sys.argv[2])
out = serve(text_a=tf.constant(queries))
answers = []
for query, label, probs in zip(queries, out["label"].numpy(), out["probabilities"].numpy()):
  answers.append({"text": query, "label": label.decode(), "probability": float(probs.max())})
  print(f"  label {label.decode()}  p={probs.max():.2f}  {query}")
json.dump(answers, open(sys.argv[3], "w", encoding="utf-8"), ensure_ascii=False, indent=1)
'
QUERIES='["정말 재미있고 감동적인 영화였어요. 강력 추천합니다!", "시간 낭비였다. 지루하고 연기도 최악", "배우들 연기가 좋았고 음악도 훌륭했다", "돈 아깝다 다시는 안 본다"]'
printf '$ (cd %q &&' "$OUT"; printf ' %q' "$PYTHON" -c '<QUERY program>' "$OUT/nsmc/export" '<4 reviews>' "$OUT/nsmc/export_answers.json"; echo ')'
(cd "$OUT" && TF_CPP_MIN_LOG_LEVEL=3 /usr/bin/time -f "%e %U %S" -o "$OUT/logs/export_query.time" \
  "$PYTHON" -c "$QUERY" "$OUT/nsmc/export" "$QUERIES" "$OUT/nsmc/export_answers.json" \
  2> "$OUT/logs/export_query.log") \
  || { tail -n 5 "$OUT/logs/export_query.log" >&2; die "querying the exported model failed"; }
awk '{ printf "export_query\t%.0f\t%.0f\n", $1, $2 + $3 }' "$OUT/logs/export_query.time" >> "$TIMES"

# ------------------------------------------------------------------ results
"$PYTHON" - "$OUT" "$MODE" <<'PY'
import json, os, sys
out, mode = sys.argv[1], sys.argv[2]

def values(path):
  result = {}
  if os.path.exists(path):
    for line in open(path, encoding="utf-8"):
      key, _, value = line.partition(" = ")
      result[key.strip()] = value.strip()
  return result

times, cpu = {}, {}
for line in open(os.path.join(out, "logs", "times.tsv"), encoding="utf-8"):
  name, seconds, cpu_seconds = line.rstrip("\n").split("\t")
  times[name], cpu[name] = int(seconds), int(cpu_seconds)  # a step's last run counts

def score(task, init):
  v = values(os.path.join(out, task, init, "eval_results.txt"))
  keys = ["eval_pearson", "eval_spearman"] if task == "korsts" else ["eval_accuracy"]
  found = [next((v[k] for k in (key, key.replace("eval_", "")) if k in v), "n/a")
           for key in keys]
  return " / ".join(f"{float(x):.4f}" if x != "n/a" else x for x in found)


def dev_rows(task):
  with open(os.path.join(out, "data", task, "dev.tsv"), encoding="utf-8") as f:
    return sum(1 for _ in f) - 1  # the header


def standard_error(task):
  """Of the pretrained run's first score on the dev set's n rows: sqrt(p(1-p)/n) for an
  accuracy, (1 - r^2)/sqrt(n) for a correlation."""
  first = score(task, "pretrained").split(" / ")[0]
  if first == "n/a":
    return "n/a"
  x, n = float(first), dev_rows(task)
  error = (1 - x * x) / n ** 0.5 if task == "korsts" else (x * (1 - x) / n) ** 0.5
  return f"{error:.3f}"


config = json.load(open(os.path.join(out, "bert_config.json"), encoding="utf-8"))
pre = values(os.path.join(out, "pretrain", "eval_results.txt"))
rows = [("NSMC (sentiment)", "nsmc", "accuracy"),
        ("KorSTS (similarity)", "korsts", "Pearson / Spearman"),
        ("Korean XNLI (inference)", "xnli", "accuracy")]
lines = [f"# Korean end to end ({mode} mode)", "",
         f"Model: L={config['num_hidden_layers']} H={config['hidden_size']} "
         f"A={config['num_attention_heads']} I={config['intermediate_size']}, "
         f"vocabulary {config['vocab_size']:,} cased WordPieces learned from the corpus. "
         "Dev-set scores (test splits are not shipped); the Korean XNLI dev file split "
         "every 5th row to dev.", "",
         "| task | metric | from pretrained | from random init | one standard error | dev rows "
         "| wall s (pretrained / random) |",
         "|---|---|---|---|---|---|---|"]
for title, task, metric in rows:
  lines.append(f"| {title} | {metric} | {score(task, 'pretrained')} | {score(task, 'random')} "
               f"| {standard_error(task)} | {dev_rows(task):,} "
               f"| {times.get(task + '_pretrained', 'n/a')} / {times.get(task + '_random', 'n/a')} |")
def shown(key):
  return f"{float(pre[key]):.4f}" if key in pre else "n/a"

nsp = (f"next_sentence_accuracy {shown('next_sentence_accuracy')}, "
       if "next_sentence_accuracy" in pre else "")
lines += ["", "Pretraining (held-in evaluation, as the original's --do_eval): "
          f"masked_lm_accuracy {shown('masked_lm_accuracy')}, {nsp}"
          f"loss {shown('loss')}, global_step {pre.get('global_step', 'n/a')}.", "",
          "Times: wall-clock seconds, and CPU seconds (user + system, all threads) which do "
          "not depend on what else the machine runs.", "",
          "| step | wall s | CPU s |", "|---|---|---|"]
for name, seconds in times.items():
  lines.append(f"| {name} | {seconds} | {cpu[name]} |")
lines.append(f"| total | {sum(times.values())} | {sum(cpu.values())} |")
answers = os.path.join(out, "nsmc", "export_answers.json")
if os.path.exists(answers):
  export = os.path.join(out, "nsmc", "export")
  lines += ["", f"Exported NSMC model ({export}, signature serve_text) on raw "
            "text, from a fresh process importing only tensorflow and tensorflow_text "
            "(label 1 = positive):", "", "| review | label | probability |", "|---|---|---|"]
  for a in json.load(open(answers, encoding="utf-8")):
    lines.append(f"| {a['text']} | {a['label']} | {a['probability']:.2f} |")
with open(os.path.join(out, "results.md"), "w", encoding="utf-8") as f:
  f.write("\n".join(lines) + "\n")
print("\n" + "\n".join(lines))
PY
echo
echo "results: $OUT/results.md"
