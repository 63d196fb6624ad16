"""An independent NumPy forward pass of the original BERT, written from the paper/spec.

It reads weights by their Google checkpoint names only (a dict name -> array), so it
shares no code with modeling.py: a transposed axis or a wrong constant in either shows
up as a difference.
"""

import math

import numpy as np


def gelu_tanh(x):
  return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def gelu_erf(x):
  from math import erf  # pylint: disable=g-import-not-at-top
  return 0.5 * x * (1.0 + np.vectorize(erf)(x / math.sqrt(2.0)))


ACT = {"gelu": gelu_tanh, "gelu_exact": gelu_erf, "relu": lambda x: np.maximum(x, 0),
       "tanh": np.tanh, "linear": lambda x: x}


def layer_norm(x, gamma, beta, eps=1e-12):
  mean = x.mean(-1, keepdims=True)
  var = ((x - mean) ** 2).mean(-1, keepdims=True)
  return (x - mean) / np.sqrt(var + eps) * gamma + beta


def softmax(x, axis=-1):
  x = x - x.max(axis, keepdims=True)
  e = np.exp(x)
  return e / e.sum(axis, keepdims=True)


def encoder(w, cfg, input_ids, input_mask, segment_ids, causal=False):
  """Returns dict(embedding_output, encoder_outputs(list), sequence_output, pooled_output)."""
  w = {k: np.asarray(v, np.float64) for k, v in w.items()}
  b, s = input_ids.shape
  h, n = cfg["hidden_size"], cfg["num_attention_heads"]
  d = h // n
  act = ACT[cfg["hidden_act"]]
  x = (w["bert/embeddings/word_embeddings"][input_ids]
       + w["bert/embeddings/token_type_embeddings"][segment_ids]
       + w["bert/embeddings/position_embeddings"][:s][None])
  x = layer_norm(x, w["bert/embeddings/LayerNorm/gamma"], w["bert/embeddings/LayerNorm/beta"])
  emb = x
  allowed = np.broadcast_to(input_mask[:, None, None, :].astype(np.float64), (b, 1, s, s))
  if causal:
    allowed = allowed * np.tril(np.ones((s, s)))[None, None]
  bias = (1.0 - allowed) * -10000.0
  outs = []
  for i in range(cfg["num_hidden_layers"]):
    p = f"bert/encoder/layer_{i}"

    def dense(t, name):
      return t @ w[f"{p}/{name}/kernel"] + w[f"{p}/{name}/bias"]

    def heads(t):
      return t.reshape(b, s, n, d).transpose(0, 2, 1, 3)

    q = heads(dense(x, "attention/self/query"))
    k = heads(dense(x, "attention/self/key"))
    v = heads(dense(x, "attention/self/value"))
    probs = softmax(q @ k.transpose(0, 1, 3, 2) / math.sqrt(d) + bias)
    ctx = (probs @ v).transpose(0, 2, 1, 3).reshape(b, s, h)
    a = layer_norm(dense(ctx, "attention/output/dense") + x,
                   w[f"{p}/attention/output/LayerNorm/gamma"],
                   w[f"{p}/attention/output/LayerNorm/beta"])
    inter = act(dense(a, "intermediate/dense"))
    x = layer_norm(dense(inter, "output/dense") + a, w[f"{p}/output/LayerNorm/gamma"],
                   w[f"{p}/output/LayerNorm/beta"])
    outs.append(x)
  pooled = np.tanh(x[:, 0] @ w["bert/pooler/dense/kernel"] + w["bert/pooler/dense/bias"])
  return {"embedding_output": emb, "encoder_outputs": outs, "sequence_output": x,
          "pooled_output": pooled}


def masked_lm_logits(w, cfg, sequence_output, positions):
  w = {k: np.asarray(v, np.float64) for k, v in w.items()}
  g = np.stack([sequence_output[i, positions[i]] for i in range(len(positions))])
  t = ACT[cfg["hidden_act"]](g @ w["cls/predictions/transform/dense/kernel"]
                             + w["cls/predictions/transform/dense/bias"])
  t = layer_norm(t, w["cls/predictions/transform/LayerNorm/gamma"],
                 w["cls/predictions/transform/LayerNorm/beta"])
  return t @ w["bert/embeddings/word_embeddings"].T + w["cls/predictions/output_bias"]


def squad_logits(w, sequence_output):
  wt = np.asarray(w["cls/squad/output_weights"], np.float64)
  bias = np.asarray(w["cls/squad/output_bias"], np.float64)
  logits = sequence_output @ wt.T + bias  # [B, S, 2]
  return logits[..., 0], logits[..., 1]
