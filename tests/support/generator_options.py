"""pretraining_generator.generate()'s two options objects from keywords named as their
flags, as create_pretraining_data.py makes them from its flags: the tests name a run's
settings flat (dupe_factor=2, do_whole_word_mask=True, ...)."""

import dataclasses

from bert import masking
from bert.pretraining import pretraining_generator

GENERATOR = tuple(f.name for f in dataclasses.fields(pretraining_generator.GeneratorOptions))
MASKING = tuple(f.name for f in dataclasses.fields(masking.MaskingOptions))
# generate()'s keywords besides the two objects.
TEXT = ("do_lower_case", "normalize", "split_sentences")


def options(**values):
  """(GeneratorOptions, masking.MaskingOptions) of `values`, each checked as it is made;
  a name of neither is a TypeError."""
  unknown = sorted(set(values) - set(GENERATOR) - set(MASKING))
  if unknown:
    raise TypeError(f"neither a generator nor a masking option: {unknown}")
  return (pretraining_generator.GeneratorOptions(
              **{k: v for k, v in values.items() if k in GENERATOR}),
          masking.MaskingOptions(**{k: v for k, v in values.items() if k in MASKING}))


def generate(input_files, output_files, vocab_file, **values):
  """pretraining_generator.generate with its options named flat, as the flags."""
  text = {k: values.pop(k) for k in TEXT if k in values}
  return pretraining_generator.generate(input_files, output_files, vocab_file,
                                        *options(**values), **text)
