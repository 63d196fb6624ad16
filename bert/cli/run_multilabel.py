"""BERT fine-tuning for multi-label classification: any number of labels per text.

One sigmoid per label on the pooled [CLS] vector (the classifier's head and weights),
trained with sigmoid cross-entropy; a label is predicted where its probability reaches
--threshold. For tagging data sets such as GoEmotions or toxic-comment data, and the
entity types of CoNLL-2003 sentences (tools/conll_entity_types.py writes them).

--data_dir holds labels.txt (one label per line), train.tsv, dev.tsv and test.tsv, each
line `text<TAB>labels` with the labels comma-separated (empty: no label); test.tsv may
hold the text alone. See docs/multilabel.md.

  python run_multilabel.py --data_dir=$DATA --vocab_file=$BERT_DIR/vocab.txt \
    --bert_config_file=$BERT_DIR/bert_config.json \
    --init_checkpoint=$BERT_DIR/bert_model.ckpt --do_train --do_eval --do_predict \
    --max_seq_length=64 --learning_rate=5e-5 --num_train_epochs=3 --output_dir=/tmp/ml

Outputs in --output_dir: checkpoints, eval_results.txt (eval_loss, eval_accuracy =
subset accuracy, micro/macro F1, F1 per label, global_step), test_results.tsv (predicted
labels and each label's probability per test line). --export_dir writes a SavedModel
with a token-id and a raw-text serving signature, and export_dir/ids/ with the token-id
signature alone (stock ops); --export_version=N writes TF Serving's versioned layout.
"""

from absl import flags

from bert.cli import flags_common
from bert.cli import launch
from bert.utils import errors

FLAGS = flags.FLAGS

flags_common.define_model_flags(max_seq_length=128)
flags_common.define_run_flags()
flags_common.define_distribution_flags()
flags_common.define_runtime_flags()

flags_common.define_finetuning_flags(
    data_dir_help="Folder with labels.txt, train.tsv, dev.tsv and test.tsv "
    "(text<TAB>comma-separated labels).")
flags_common.define_path("labels_file", None,
                         "The labels, one per line, in output order (default: "
                         "<data_dir>/labels.txt).")
flags.DEFINE_float("threshold", 0.5,
                   "A label is predicted where its probability is at least this.")
flags_common.define_path(
    "export_dir", None,
    "Write a SavedModel here after training/eval: signatures 'serving_default' (token ids) "
    "and 'serve_text' (raw text; load with `import tensorflow_text`), and <export_dir>/ids/: "
    "the token-id signature alone, stock TensorFlow ops (tensorflow_model_server).",
    output="folder")
flags_common.define_export_version_flag()


def main(_):
  with errors.report_user_errors(FLAGS.verbose):
    flags_common.check_paths(FLAGS)  # every output URL, before any work
    options = flags_common.options_from_flags(FLAGS)
    # Deferred: TensorFlow loads here, so --help stays fast.
    from bert.multilabel import multilabel_task
    multilabel_task.MultiLabelTask(options, FLAGS.data_dir, FLAGS.labels_file,
                                   FLAGS.threshold).run()


run = launch.entry_point(main)

if __name__ == "__main__":
  run()
