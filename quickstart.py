"""The whole BERT pipeline, end to end, on data any Python has offline (`make demo`).

  1. a pretraining corpus from the Python documentation that ships with the standard
     library (pydoc_data: the language reference's help topics, ~465 KB of English);
  2. create_vocab.py learns a small WordPiece vocabulary from it;
  3. create_pretraining_data.py writes masked-LM / next-sentence TFRecords;
  4. run_pretraining.py pretrains a small BERT for a few hundred steps;
  5. run_classifier.py fine-tunes it on bert/cli/quickstart_data (standard-library docstring
     sentences labelled files / math / network / text / time), evaluates on dev, and
     exports a SavedModel that takes raw text;
  6. a fresh Python process that imports only tensorflow and tensorflow_text loads the
     SavedModel and answers a few raw-text queries.

Each step is the same command a user would type (printed before it runs), so the
quickstart doubles as a worked example of every script. Under 10 minutes on 2 CPU cores.

The command is bert/cli/quickstart.py.
"""

from absl import app

from bert.cli import quickstart

if __name__ == "__main__":
  app.run(quickstart.main)
