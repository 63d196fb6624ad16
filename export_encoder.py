"""Exports a pretrained BERT: TF-Hub-style SavedModels, or a Hugging Face model directory.

--format=tfhub (the default) writes, side by side:
  <export_dir>/encoder       dict(input_word_ids, input_mask, input_type_ids) ->
                             dict(pooled_output, sequence_output, encoder_outputs,
                             default); fine-tunable (training=True: dropout on)
  <export_dir>/preprocessor  tokenize, bert_pack_inputs(segments, seq_length) and a
                             default signature: strings -> encoder inputs at
                             --seq_length

Both load with `tf.saved_model.load` in a process that imports only tensorflow and
tensorflow_text (see docs/export_encoder.md and tfhub_modules.py for the interface).

--format=huggingface writes <export_dir>/model.safetensors, config.json, vocab.txt and
tokenizer_config.json, for transformers' `BertModel.from_pretrained(export_dir)` and
`BertTokenizer.from_pretrained(export_dir)`: the encoder with its pooler, and the head
the checkpoint holds: the masked-LM and next-sentence heads (BertForPreTraining), or a
fine-tuned run's head under the class transformers' pipeline() and AutoModelFor* pick
(BertForSequenceClassification with the run's labels, BertForQuestionAnswering,
BertForTokenClassification, BertForMultipleChoice); every checkpoint weight not written
is named in a warning (hugging_face.py, model_export.py).

--format=keras_hub writes a fine-tuned classifier (classification, multi-label or
regression run) as a keras-hub preset: `keras_hub.models.BertTextClassifier.from_preset(
export_dir)` loads the encoder, the head (num_classes from the checkpoint) and a
preprocessor packing raw text to --seq_length; the labels are in metadata.json. Needs
the keras-hub package (not a requirement of this project).

  python export_encoder.py \
    --bert_config_file=uncased_L-12_H-768_A-12/bert_config.json \
    --vocab_file=uncased_L-12_H-768_A-12/vocab.txt \
    --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt \
    --do_lower_case=True --export_dir=/tmp/bert_hub

The command is bert/cli/export_encoder.py.
"""

from absl import app

from bert.cli import export_encoder

if __name__ == "__main__":
  app.run(export_encoder.main)
