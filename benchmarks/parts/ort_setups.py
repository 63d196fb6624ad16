"""The ONNX Runtime setups a user would try, built from the same weights (bench_peers.py).

  .venv-hf/bin/python benchmarks/parts/ort_setups.py REQUEST.json

REQUEST.json: {"sources": {name: float32 .onnx}, "out_dir": ..., "num_heads": ...,
"hidden_size": ...}. The sources are the two usual ways to ONNX: "hf" (transformers'
model of our Hugging Face export, torch.onnx.export; hugging_face_worker.py prepare_predict) and
"tf2onnx" (tf2onnx --opset 17 of our export's token-id SavedModel, `ids/`). For each:
  <name>_plain        the converter's graph as is (ORT still applies ORT_ENABLE_ALL);
  <name>_fused        ONNX Runtime's transformer optimizer (model_type bert, opt_level 1);
and of both, quantize_dynamic with QInt8 or QUInt8 weights, per-tensor or per-channel:
  <name>_<plain|fused>_<qint8|quint8>_<tensor|channel>.
Prints one JSON line: {"setups": [{name, file, source, fused, precision, weights,
per_channel}], "failed": {name: why}}. A setup that cannot be built is reported, not fatal.
Spinning on/off is a session option, not a file: bench_peers.py times each file with both.
"""

import json
import os
import sys


def main():
  with open(sys.argv[1], encoding="utf-8") as handle:
    request = json.load(handle)
  import onnx  # pylint: disable=g-import-not-at-top
  from onnxruntime.quantization import QuantType, quantize_dynamic  # pylint: disable=g-import-not-at-top
  from onnxruntime.transformers import optimizer  # pylint: disable=g-import-not-at-top
  out_dir = request["out_dir"]
  os.makedirs(out_dir, exist_ok=True)
  setups, failed = [], {}
  for source, onnx_file in sorted(request["sources"].items()):
    floats = {f"{source}_plain": (onnx_file, False)}
    fused_file = os.path.join(out_dir, f"{source}_fused.onnx")
    try:
      optimized = optimizer.optimize_model(
          onnx_file, model_type="bert", num_heads=int(request["num_heads"]),
          hidden_size=int(request["hidden_size"]), opt_level=1)
      optimized.save_model_to_file(fused_file)
      floats[f"{source}_fused"] = (fused_file, True)
    except Exception as exc:  # pylint: disable=broad-except
      failed[f"{source}_fused"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    for name, (path, fused) in floats.items():
      setups.append({"name": name, "file": path, "source": source, "fused": fused,
                     "precision": "float32", "weights": "float32", "per_channel": False})
      for weights, qtype in (("qint8", QuantType.QInt8), ("quint8", QuantType.QUInt8)):
        for per_channel in (False, True):
          qname = f"{name}_{weights}_{'channel' if per_channel else 'tensor'}"
          qfile = os.path.join(out_dir, qname + ".onnx")
          try:
            # The fused graph's intermediate tensors carry no inferred types: the quantizer
            # is told they are float32, as every activation of this model is.
            quantize_dynamic(path, qfile, weight_type=qtype, per_channel=per_channel,
                             extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
            setups.append({"name": qname, "file": qfile, "source": source, "fused": fused,
                           "precision": "int8", "weights": weights,
                           "per_channel": per_channel})
          except Exception as exc:  # pylint: disable=broad-except
            failed[qname] = f"{type(exc).__name__}: {str(exc)[:200]}"
  print(json.dumps({"setups": setups, "failed": failed}))


if __name__ == "__main__":
  main()
