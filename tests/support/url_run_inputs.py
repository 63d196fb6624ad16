"""The vocabulary (WORDS), MRPC rows and pretraining corpus of the small runs on URLs:
ram:// in tests/commands/test_url_paths.py, gs:// in tests/commands/test_gcs_pipeline.py."""

WORDS = ("[PAD] [UNK] [CLS] [SEP] [MASK] the cat sat on mat . is a man went home she said "
         "no dog ran ##s and to of in it where did , eu rejects german call peter "
         "blackburn walks away eats cake sings loudly reads book lands flies swims talks "
         "jumps sits he").split()
MRPC_HEADER = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n"
MRPC_ROWS = ["1\t1\t2\tthe cat sat on the mat .\tthe cat is on the mat .",
             "0\t3\t4\ta man went home .\tshe said no .",
             "1\t5\t6\tthe dog ran .\tthe dog ran home .",
             "0\t7\t8\tit is a cat .\tshe went to the mat ."]
CORPUS = "\n\n".join("\n".join(" ".join(WORDS[5 + (d + s) % 20:5 + (d + s) % 20 + 6]) + " ."
                                for s in range(4)) for d in range(12)) + "\n"
