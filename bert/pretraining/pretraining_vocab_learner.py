"""tensorflow-text's WordPiece vocabulary learner, computed on integer arrays: the token
list its `learn()` returns on the same word counts and settings, token for token, in a
fraction of its time. NumPy only.

tensorflow-text's learner (tensorflow_text/tools/wordpiece_vocab/
wordpiece_tokenizer_learner_lib.py) searches a count threshold by bisection; at each
threshold it relearns from scratch over `num_iterations` iterations. An iteration counts
every substring that starts where a piece of a word starts (every position in the first
iteration, the starts of the word's greedy longest-match pieces under the previous
vocabulary after it), then walks the substrings from the longest down, keeps those whose
count reaches the threshold and takes each one's count off its prefixes. What is left of a
substring's count after that is what ends at the end of its word: the count of a substring
that starts at a piece start and runs to the end of the word. So an iteration's kept
tokens are suffixes of words only, and it needs no substring table:

- every suffix of every word is interned once, as a node of a trie of suffixes (read from
  the end), with integer ids; a token is (node, whether it carries the joiner);
- the first iteration does not depend on the threshold: its counts are summed once;
- each later iteration is a greedy longest-match segmentation of every distinct word under
  the previous vocabulary (a boolean mask over the token ids), done for all words at once
  over a precomputed table of the substrings that could ever be tokens, and a sum of the
  word counts over the piece starts' suffixes;
- the final order is tensorflow-text's: the reserved tokens, the characters sorted, then
  the tokens by count (highest first), ties in string order, each token once.

Memory grows with the distinct words (their characters, the suffix trie, the table).
"""

import dataclasses

import numpy as np

# Counts are summed in float64 (np.bincount): exact below 2**53.
_EXACT_SUM = 2 ** 53


@dataclasses.dataclass
class _Words:
  """The learner's words as arrays: code points, where each word starts, its count."""
  strings: list          # the words (str), in the learner's order
  counts: np.ndarray     # int64 [W]
  lengths: np.ndarray    # int64 [W]
  starts: np.ndarray     # int64 [W]: each word's first position in `chars`
  chars: np.ndarray      # uint32 [P]: the code points of all words, one after another


def _as_words(strings, counts):
  lengths = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
  joined = "".join(strings).encode("utf-32-le", "surrogatepass")
  chars = np.frombuffer(joined, dtype=np.uint32)
  starts = np.zeros(len(strings), dtype=np.int64)
  np.cumsum(lengths[:-1], out=starts[1:])
  return _Words(list(strings), np.asarray(counts, dtype=np.int64), lengths, starts, chars)


def _word_of_position(words):
  """int64 [P]: the index of the word each position belongs to."""
  return np.repeat(np.arange(len(words.strings), dtype=np.int64), words.lengths)


def _search_thresholds(counts, upper_thresh, lower_thresh):
  """tensorflow-text's get_search_threshs: the bounds clipped to the word counts."""
  max_count, min_count = max(counts), min(counts)
  if upper_thresh is None:
    upper = max_count
  else:
    upper = max_count if max_count < upper_thresh else upper_thresh
  if lower_thresh is None:
    lower = min_count
  else:
    lower = min_count if min_count > lower_thresh else lower_thresh
  return upper, lower


def _alphabet(words, max_unique_chars):
  """(the code points of the words, which of them are in the alphabet, each position's
  index into them). The alphabet: the max_unique_chars characters of the highest counts
  (ties in character order), each character counted with its word's count."""
  code_points, inverse = np.unique(words.chars, return_inverse=True)
  inverse = inverse.reshape(-1)
  weights = words.counts[_word_of_position(words)]
  if int(words.counts.sum()) * max(1, int(words.lengths.max(initial=1))) < _EXACT_SUM:
    char_counts = np.bincount(inverse, weights=weights,
                              minlength=len(code_points)).astype(np.int64)
  else:
    char_counts = np.zeros(len(code_points), dtype=np.int64)
    np.add.at(char_counts, inverse, weights)
  ranked = np.lexsort((code_points, -char_counts))
  allowed = np.zeros(len(code_points), dtype=bool)
  allowed[ranked[:max(0, min(len(code_points), max_unique_chars))]] = True
  return code_points, allowed, inverse


def alphabet(word_counts, max_unique_chars):
  """The set of characters tensorflow-text's learner keeps (get_allowed_chars): the
  max_unique_chars most frequent of {word: count}, ties in character order."""
  pairs = list(word_counts.items())
  if not pairs:
    return set()
  words = _as_words([w for w, _ in pairs], [c for _, c in pairs])
  code_points, allowed, _ = _alphabet(words, max_unique_chars)
  return {chr(c) for c in code_points[allowed]}


def _input_words(pairs, reserved_tokens, max_token_length, max_unique_chars,
                 max_input_tokens):
  """tensorflow-text's get_input_words, get_allowed_chars and filter_input_words: the
  words the learner learns from, most frequent first (ties in input order)."""
  reserved = set(reserved_tokens)
  kept = [(word, count) for word, count in pairs
          if not (len(word) > max_token_length or word in reserved)]
  if not kept:
    return _as_words([], [])
  words = _as_words([w for w, _ in kept], [c for _, c in kept])
  code_points, allowed, inverse = _alphabet(words, max_unique_chars)
  banned_per_word = np.bincount(_word_of_position(words)[~allowed[inverse]],
                                minlength=len(kept))
  # Most frequent first, ties in input order; then the first max_input_tokens of those
  # whose characters are all in the alphabet.
  order = np.argsort(-words.counts, kind="stable")
  order = order[banned_per_word[order] == 0]
  if max_input_tokens is not None and max_input_tokens != -1:
    order = order[:max(0, max_input_tokens)]
  return _select(words, order)


def _select(words, order):
  """The words `order` names, in that order, as _Words (no text encoded again)."""
  lengths = words.lengths[order]
  starts = np.zeros(len(order), dtype=np.int64)
  np.cumsum(lengths[:-1], out=starts[1:])
  # Each selected word's characters: its old start plus 0, 1, ... its length - 1.
  shift = np.repeat(words.starts[order] - starts, lengths)
  chars = words.chars[np.arange(int(lengths.sum()), dtype=np.int64) + shift]
  return _Words([words.strings[i] for i in order], words.counts[order], lengths, starts,
                chars)


class _SuffixTable:
  """Every suffix of every word interned as a node, and for every position of every word
  the substrings starting there that could ever be a token, longest first.

  Node ids: 0..C-1 are the single characters (C: the alphabet of the words), then the
  longer suffixes, shortest first. A token is a node's text with or without the joiner
  (joined for a piece that does not start its word, where include_joiner_token; without
  it a piece is its bare substring wherever it starts). Only the tokens any vocabulary can
  hold get an id (0..num_tokens-1): the suffixes as they occur (a word whole, bare; a
  suffix after the word's first character, joined) and the characters bare and joined.
  """

  def __init__(self, words, include_joiner_token):
    self.words = words
    self.include_joiner_token = include_joiner_token
    num_positions = len(words.chars)
    word_of = _word_of_position(words)
    self.word_of = word_of
    offset = np.arange(num_positions, dtype=np.int64) - words.starts[word_of]
    remaining = words.lengths[word_of] - offset  # length of the suffix starting here
    self.char_points, char_ids = np.unique(words.chars, return_inverse=True)
    char_ids = char_ids.astype(np.int64).reshape(-1)
    num_chars = len(self.char_points)
    # The trie of suffixes: suffix(p) = chars[p] + suffix(p + 1), interned length by
    # length. keys[i] = child node * C + character, sorted, for node keys_node[i].
    node = np.empty(num_positions, dtype=np.int64)
    last = remaining == 1
    node[last] = char_ids[last]
    node_length = [np.ones(num_chars, dtype=np.int64)]
    keys, key_nodes = [], []
    next_id = num_chars
    by_length = np.argsort(remaining, kind="stable")
    bounds = np.searchsorted(remaining[by_length], np.arange(1, remaining.max(initial=0) + 2))
    for length in range(2, len(bounds)):
      here = by_length[bounds[length - 1]:bounds[length]]
      if not here.size:
        continue
      combined = node[here + 1] * num_chars + char_ids[here]
      unique, inverse = np.unique(combined, return_inverse=True)
      node[here] = next_id + inverse.reshape(-1)
      keys.append(unique)
      key_nodes.append(np.arange(next_id, next_id + len(unique), dtype=np.int64))
      node_length.append(np.full(len(unique), length, dtype=np.int64))
      next_id += len(unique)
    self.num_chars = num_chars
    self.node_length = np.concatenate(node_length)
    self._keys = np.concatenate(keys) if keys else np.zeros(0, dtype=np.int64)
    self._key_nodes = np.concatenate(key_nodes) if key_nodes else np.zeros(0, np.int64)
    # A node's text: one position whose suffix it is (its word from there), or its
    # character for a character that ends no word.
    self.text_position = np.full(next_id, -1, dtype=np.int64)
    self.text_position[node] = np.arange(num_positions, dtype=np.int64)
    # The token ids: key = 2 * node + joined, numbered where a vocabulary can hold it.
    joined = (offset > 0) if include_joiner_token else np.zeros(num_positions, bool)
    always_key = 2 * np.arange(num_chars, dtype=np.int64)
    if include_joiner_token:
      always_key = np.concatenate([always_key, always_key + 1])
    possible = np.zeros(2 * next_id, dtype=bool)
    possible[always_key] = True
    possible[2 * node + joined] = True
    self.key_of_token = np.flatnonzero(possible)
    self.num_tokens = len(self.key_of_token)
    self._token_of_key = np.full(2 * next_id, -1, dtype=np.int64)
    self._token_of_key[self.key_of_token] = np.arange(self.num_tokens, dtype=np.int64)
    self.suffix_token = self._token_of_key[2 * node + joined]  # [P]
    self.always = np.zeros(self.num_tokens, dtype=bool)  # every vocabulary holds these
    self.always[self._token_of_key[always_key]] = True
    self.bare_chars = self._token_of_key[2 * np.arange(num_chars, dtype=np.int64)]
    self._build_candidates(char_ids, offset)

  def lookup(self, child, char_ids):
    """The nodes of char + child's text (-1 where no word has that suffix)."""
    if not len(self._keys):
      return np.full(len(child), -1, dtype=np.int64)
    combined = child * self.num_chars + char_ids
    where = np.minimum(np.searchsorted(self._keys, combined), len(self._keys) - 1)
    return np.where(self._keys[where] == combined, self._key_nodes[where], -1)

  def _build_candidates(self, char_ids, offset):
    """For every position p, the substrings starting there that are tokens of some
    vocabulary, longest first: candidate_token and candidate_next (where the next piece
    starts, -1 at the end of the word) over candidate_offset[p]:candidate_offset[p + 1]
    (candidate_start: p, for each).
    The last one of each position is its character, which every vocabulary holds.

    A substring is a token only if it is a suffix of some word (or one character), and a
    prefix of a suffix's text is found by walking back from where it ends: the walk from
    each end stops at the first start whose substring is no word's suffix. Each step of
    the walk makes substrings one longer, at most one per start."""
    num_positions = len(char_ids)
    word_end = self.words.starts[self.word_of] + self.words.lengths[self.word_of]
    ends = np.arange(num_positions, dtype=np.int64) + 1   # substring [start, end)
    starts = ends - 1
    nodes = char_ids.copy()
    steps = []
    per_start = np.zeros(num_positions + 1, dtype=np.int64)
    while starts.size:
      joined = (offset[starts] > 0) if self.include_joiner_token else np.zeros(
          len(starts), dtype=bool)
      token = self._token_of_key[2 * nodes + joined]
      keep = token >= 0
      start = starts[keep]
      steps.append((start, np.where(ends[keep] == word_end[start], -1, ends[keep]),
                    token[keep]))
      per_start[start + 1] += 1
      # One character further back, within the same word.
      more = offset[starts] > 0
      starts, ends, nodes = starts[more] - 1, ends[more], nodes[more]
      nodes = self.lookup(nodes, char_ids[starts])
      present = nodes >= 0
      starts, ends, nodes = starts[present], ends[present], nodes[present]
    self.candidate_offset = np.cumsum(per_start)
    fill = self.candidate_offset[:-1].copy()
    size = int(self.candidate_offset[-1])
    self.candidate_start = np.repeat(np.arange(num_positions, dtype=np.int64), per_start[1:])
    self.candidate_token = np.empty(size, dtype=np.int64)
    self.candidate_next = np.empty(size, dtype=np.int64)
    for start, next_start, token in reversed(steps):  # the longest first
      at = fill[start]
      self.candidate_token[at] = token
      self.candidate_next[at] = next_start
      fill[start] += 1

  def text(self, token):
    """The token's string, with the joiner where it carries it."""
    node, joined = divmod(int(self.key_of_token[token]), 2)
    position = self.text_position[node]
    if position < 0:
      text = chr(self.char_points[node])
    else:
      word = int(self.word_of[position])
      offset = int(position - self.words.starts[word])
      text = self.words.strings[word][offset:offset + int(self.node_length[node])]
    return text, bool(joined)

  def token_of(self, text, joined):
    """The token id of `text` (joined: it carries the joiner), or -1 where none."""
    if not text:
      return -1
    codes = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    where = np.searchsorted(self.char_points, codes)
    if np.any(where >= len(self.char_points)) or np.any(
        self.char_points[np.minimum(where, len(self.char_points) - 1)] != codes):
      return -1
    node = int(where[-1])
    for char_id in where[-2::-1]:
      node = int(self.lookup(np.array([node]), np.array([char_id]))[0])
      if node < 0:
        return -1
    return int(self._token_of_key[2 * node + (1 if joined and self.include_joiner_token
                                              else 0)])


class _Learner:
  """learn_with_thresh for any threshold, over one _SuffixTable."""

  def __init__(self, table, num_iterations):
    self.table = table
    self.num_iterations = num_iterations
    words = table.words
    total = int(words.counts.sum()) if len(words.counts) else 0
    self._exact = total < _EXACT_SUM
    # The first iteration: every position starts a piece.
    self.first_counts = self._sum(table.suffix_token, words.counts[table.word_of])
    self.first_positions = words.starts[words.lengths > 0]
    self.first_weights = words.counts[words.lengths > 0]

  def _sum(self, tokens, weights):
    if self._exact:  # whole numbers below 2**53: float64 sums are exact
      return np.bincount(tokens, weights=weights,
                         minlength=self.table.num_tokens).astype(np.int64)
    sums = np.zeros(self.table.num_tokens, dtype=np.int64)
    np.add.at(sums, tokens, weights)
    return sums

  def _iteration(self, vocabulary):
    """One later iteration: each word split greedily (longest piece first) by
    `vocabulary` (bool per token), its count summed on the suffix at each piece start.
    Where each piece would end is found for every position at once (the first candidate
    of the position that the vocabulary holds); then all words advance together, a piece
    at a time."""
    table = self.table
    usable = np.flatnonzero(vocabulary[table.candidate_token])
    at = table.candidate_start[usable]
    first = np.ones(len(at), dtype=bool)
    np.not_equal(at[1:], at[:-1], out=first[1:])
    # Every position's last candidate is a character, which every vocabulary holds.
    if np.count_nonzero(first) != len(table.candidate_offset) - 1:
      raise RuntimeError("a word found no piece of the vocabulary")
    next_start = table.candidate_next[usable[first]]  # one per position, in order
    positions, weights = self.first_positions, self.first_weights
    tokens, sums = [], []
    while positions.size:
      tokens.append(table.suffix_token[positions])
      sums.append(weights)
      positions = next_start[positions]
      more = positions >= 0
      positions, weights = positions[more], weights[more]
    if not tokens:
      return np.zeros(table.num_tokens, dtype=np.int64)
    return self._sum(np.concatenate(tokens), np.concatenate(sums))

  def counts(self, thresh):
    """The tokens' counts after the last iteration at `thresh` (0: not a token; the
    characters bare and joined that fall below it count 1, as tensorflow-text adds them)."""
    counts = self.first_counts
    for _ in range(1, self.num_iterations):
      counts = self._iteration((counts >= thresh) | self.table.always)
    kept = np.where(counts >= thresh, counts, 0)
    kept[self.table.always & (kept == 0)] = 1
    return kept


def _dedupe(tokens):
  seen, out = set(), []
  for token in tokens:
    if token not in seen:
      seen.add(token)
      out.append(token)
  return out


# tensorflow-text's learn() defaults (create_vocab's flags read them: LearnOptions).
UPPER_THRESH, LOWER_THRESH, NUM_ITERATIONS = 10_000_000, 10, 4
MAX_INPUT_TOKENS, MAX_TOKEN_LENGTH, MAX_UNIQUE_CHARS, SLACK_RATIO = 5_000_000, 50, 1000, 0.05


def learn(word_counts, vocab_size, reserved_tokens, upper_thresh=UPPER_THRESH,
          lower_thresh=LOWER_THRESH, num_iterations=NUM_ITERATIONS,
          max_input_tokens=MAX_INPUT_TOKENS, max_token_length=MAX_TOKEN_LENGTH,
          max_unique_chars=MAX_UNIQUE_CHARS, slack_ratio=SLACK_RATIO,
          include_joiner_token=True, joiner="##"):
  """tensorflow_text.tools.wordpiece_vocab.wordpiece_tokenizer_learner_lib.learn: the same
  arguments, the same token list.

  word_counts: {word: count} or (word, count) pairs; counts are positive integers.
  Refused with ValueError (tensorflow-text would learn from them by rules these arrays do
  not hold): a count below 1, an upper_thresh that starts the threshold search below 1
  (every substring would be a token), an empty joiner, and a word that starts with the
  joiner (its pieces would be spelled like another word's ##pieces). max_input_tokens
  None is no maximum, as tensorflow-text's docstring says (its code fails on it).
  """
  pairs = list(word_counts.items() if isinstance(word_counts, dict) else word_counts)
  if not pairs:
    raise ValueError("no words to learn from")
  counts = [count for _, count in pairs]
  if min(counts) < 1:
    raise ValueError(f"word counts must be at least 1, got {min(counts)}")
  upper, lower = _search_thresholds(counts, upper_thresh, lower_thresh)
  if (upper + lower) // 2 < 1:  # lower is 1 or more: the search then stays there
    raise ValueError(f"the threshold search must stay at 1 or more (lower {lower}, upper "
                     f"{upper})")
  if include_joiner_token and not joiner:
    raise ValueError("the joiner must not be empty")
  words = _input_words(pairs, reserved_tokens, max_token_length, max_unique_chars,
                       max_input_tokens)
  if include_joiner_token:
    clash = next((w for w in words.strings if w.startswith(joiner)), None)
    if clash is not None:
      raise ValueError(f"the word {clash!r} starts with the joiner {joiner!r}")
  chars = sorted(set(words.strings and "".join(words.strings)))
  head = _dedupe(list(reserved_tokens) + chars)
  if not len(words.strings) or not len(words.chars):
    return head  # nothing to learn: every threshold gives the same list
  table = _SuffixTable(words, include_joiner_token)
  learner = _Learner(table, num_iterations)
  # Tokens whose string is already in the head (a reserved token, or a bare character)
  # add nothing to the list's length.
  in_head = np.zeros(table.num_tokens, dtype=bool)
  in_head[table.bare_chars] = True
  for token in reserved_tokens:
    bare = table.token_of(token, joined=False)
    if bare >= 0:
      in_head[bare] = True
    if include_joiner_token and token.startswith(joiner):
      joined = table.token_of(token[len(joiner):], joined=True)
      if joined >= 0:
        in_head[joined] = True

  def size(token_counts):
    return len(head) + int(np.count_nonzero((token_counts > 0) & ~in_head))

  # tensorflow-text's learn_binary_search, as a loop.
  slack_count = slack_ratio * vocab_size
  if slack_count < 0:
    slack_count = 0
  while True:
    thresh = (upper + lower) // 2
    token_counts = learner.counts(thresh)
    current = size(token_counts)
    within_slack = current <= vocab_size and vocab_size - current <= slack_count
    if within_slack or lower >= upper or thresh <= 1:
      break
    if current > vocab_size:
      lower = thresh + 1
    else:
      upper = thresh - 1
  learned = []
  for token in np.flatnonzero(token_counts):
    text, joined = table.text(token)
    learned.append((joiner + text if joined else text, int(token_counts[token])))
  learned.sort(key=lambda pair: pair[0])
  learned.sort(key=lambda pair: pair[1], reverse=True)
  return _dedupe(head + [token for token, _ in learned])
