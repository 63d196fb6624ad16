"""The pretraining corpus read as documents: lines, optional sentence splitting, chunks.

The original's input format: one sentence a line, a blank line between
documents. `read_documents` streams them from the input files, `chunk_documents` groups
them into the chunks each worker turns into instances, `sentence_splitter` splits
corpora of one paragraph a line (an optional library).
"""

from bert.utils import errors

from bert.utils import input_checks


def read_documents(input_files, on_encoding_error, counters, split_sentences=None):
  """Yields raw documents (list of stripped, non-blank lines) from the input files.

  As the original, a blank line ends a document and a new file does not: a file that ends
  without a blank line continues its last document into the next file.
  counters: dict; "lines", "skipped_lines" and "chars" are added to as lines are read.
  split_sentences: None, or a function line -> list of sentences (not the original's:
  for corpora of one paragraph a line).
  """
  document = []
  for path in input_files:
    previous = 0
    for number, line in input_checks.read_text_lines(path, on_encoding_error):
      counters["skipped_lines"] += number - previous - 1
      previous = number
      counters["lines"] += 1
      counters["chars"] += len(line)
      line = line.strip()
      if line and split_sentences is not None:
        document.extend(s for s in (x.strip() for x in split_sentences(line)) if s)
      elif line:
        document.append(line)
      elif document:
        yield document
        document = []
  if document:
    yield document


def chunk_documents(documents, documents_per_chunk):
  """Groups raw documents into chunks; a last chunk under half size joins the one before.

  A tiny last chunk would draw its random-next segments from only a few documents.
  """
  pending = None
  chunk = []
  for document in documents:
    chunk.append(document)
    if len(chunk) == documents_per_chunk:
      if pending is not None:
        yield pending
      pending, chunk = chunk, []
  if chunk and pending is not None and len(chunk) < documents_per_chunk // 2 + 1:
    pending.extend(chunk)
    chunk = []
  if pending is not None:
    yield pending
  if chunk:
    yield chunk


SENTENCE_SPLITTERS = ("pysbd",)


def sentence_splitter(name, language="en"):
  """A function line -> list of sentences from an optional sentence-boundary library.

  name: "pysbd" (pip install pysbd; rule-based, about 20 languages, not Korean). The
  library is imported only when asked for; a missing one is a one-line UserError.
  """
  if name not in SENTENCE_SPLITTERS:
    raise errors.UserError(
        f"--split_sentences={name}: unknown; choose one of {', '.join(SENTENCE_SPLITTERS)}")
  try:
    # An optional dependency, imported only when asked for: deferred on purpose.
    import pysbd  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise errors.UserError(
        f"--split_sentences={name}: the {name} package is not installed "
        f"(pip install {name})") from None
  try:
    segmenter = pysbd.Segmenter(language=language, clean=False)
  except ValueError as exc:
    raise errors.UserError(
        f"--sentence_language={language}: {name} does not support it ({exc})") from None
  return segmenter.segment
