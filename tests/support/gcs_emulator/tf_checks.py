"""TensorFlow's own gs:// client against the emulator: one process, every operation the
project relies on, results printed as one JSON object (tests/utils/test_gcs_client.py checks
the values).

  python tf_checks.py gs://BUCKET gs://readonly-BUCKET gs://MISSING-BUCKET EMULATOR_URL

BUCKET is empty and writable; readonly-BUCKET holds in.txt (b"read me"); MISSING-BUCKET
does not exist; EMULATOR_URL (http://127.0.0.1:PORT) lets this process overwrite an object
behind TensorFlow's back.
"""
import base64
import json
import os
import sys
import threading
import urllib.parse
import urllib.request

import numpy as np
import tensorflow as tf

gfile = tf.io.gfile
ALL_BYTES = bytes(range(256)) * 3 + b"\r\n\x00end"
RECORDS = [b"", b"first", bytes(range(256)), b"\n" * 70000, "ünïcode".encode("utf-8")]


def b64(data):
  return base64.b64encode(data).decode("ascii")


def write(path, data, mode="wb"):
  with gfile.GFile(path, mode) as f:
    f.write(data)


def read(path):
  with gfile.GFile(path, "rb") as f:
    return f.read()


def error_of(fn):
  """{"type", "message"} of the exception fn raises, else {"returned": repr}."""
  try:
    return {"returned": repr(fn())}
  except Exception as err:  # noqa: BLE001 - the exception is what is reported
    return {"type": type(err).__name__, "module": type(err).__module__,
            "tf_error": isinstance(err, tf.errors.OpError), "message": str(err)}


def files_and_folders(bucket):
  """gfile operations on plain files and folders."""
  out = {}
  root = f"{bucket}/files"
  gfile.makedirs(f"{root}/sub/deeper")
  write(f"{root}/all_bytes.bin", ALL_BYTES)
  out["all_bytes"] = b64(read(f"{root}/all_bytes.bin"))
  out["stat_length"] = gfile.stat(f"{root}/all_bytes.bin").length
  with gfile.GFile(f"{root}/all_bytes.bin", "rb") as f:
    f.seek(250)
    out["seek_250_read_10"] = b64(f.read(10))
    out["tell_after"] = f.tell()
  write(f"{root}/log.txt", "line 1\n", "w")
  write(f"{root}/log.txt", "line 2\n", "a")
  out["appended"] = read(f"{root}/log.txt").decode("utf-8")
  write(f"{root}/sub/a.txt", b"A")
  write(f"{root}/sub/b.txt", b"B")
  out["listdir_root"] = sorted(gfile.listdir(root))
  out["listdir_sub"] = sorted(gfile.listdir(f"{root}/sub"))
  out["glob_sub_txt"] = sorted(gfile.glob(f"{root}/sub/*.txt"))
  out["glob_star_star"] = sorted(gfile.glob(f"{root}/*/*"))
  out["walk"] = [[d, sorted(s), sorted(f)] for d, s, f in gfile.walk(root)]
  gfile.copy(f"{root}/sub/a.txt", f"{root}/copied.txt")
  out["copied"] = read(f"{root}/copied.txt").decode("utf-8")
  out["copy_onto_existing"] = error_of(
      lambda: gfile.copy(f"{root}/sub/b.txt", f"{root}/copied.txt"))
  out["copied_after_refusal"] = read(f"{root}/copied.txt").decode("utf-8")
  gfile.rename(f"{root}/copied.txt", f"{root}/renamed.txt")
  out["renamed"] = read(f"{root}/renamed.txt").decode("utf-8")
  out["rename_source_exists"] = gfile.exists(f"{root}/copied.txt")
  # rename(overwrite=False) checks, then copies: not one atomic step on GCS.
  out["rename_onto_existing"] = error_of(
      lambda: gfile.rename(f"{root}/sub/b.txt", f"{root}/renamed.txt", overwrite=False))
  out["renamed_after_refusal"] = read(f"{root}/renamed.txt").decode("utf-8")
  gfile.rename(f"{root}/sub/b.txt", f"{root}/renamed.txt", overwrite=True)
  out["renamed_after_overwrite"] = read(f"{root}/renamed.txt").decode("utf-8")
  gfile.rename(f"{root}/sub", f"{root}/moved")
  out["folder_rename_listdir"] = sorted(gfile.listdir(f"{root}/moved"))
  out["folder_rename_a"] = read(f"{root}/moved/a.txt").decode("utf-8")
  out["folder_rename_old_exists"] = gfile.exists(f"{root}/sub")
  gfile.remove(f"{root}/renamed.txt")
  out["removed_exists"] = gfile.exists(f"{root}/renamed.txt")
  out["remove_missing"] = error_of(lambda: gfile.remove(f"{root}/renamed.txt"))
  out["read_missing"] = error_of(lambda: read(f"{root}/never.txt"))
  gfile.rmtree(f"{root}/moved")
  out["after_rmtree_exists"] = gfile.exists(f"{root}/moved")
  out["after_rmtree_listdir_root"] = sorted(gfile.listdir(root))
  return out


def folders(bucket, emulator_url):
  """What exists/isdir/mkdir say about folders with and without a marker object."""
  out = {}
  # A folder only implied by an object under it: no "implied/" marker object.
  put_direct(emulator_url, bucket, "implied/child.txt", b"c")
  out["implied_exists"] = gfile.exists(f"{bucket}/implied")
  out["implied_isdir"] = gfile.isdir(f"{bucket}/implied")
  out["implied_listed"] = sorted(gfile.listdir(bucket))
  gfile.makedirs(f"{bucket}/marked")
  out["marked_exists"] = gfile.exists(f"{bucket}/marked")
  out["marked_isdir"] = gfile.isdir(f"{bucket}/marked")
  out["missing_exists"] = gfile.exists(f"{bucket}/nothing")
  out["missing_isdir"] = gfile.isdir(f"{bucket}/nothing")
  out["file_isdir"] = gfile.isdir(f"{bucket}/implied/child.txt")
  out["bucket_root_isdir"] = gfile.isdir(bucket)
  # TensorFlow's CreateDir uploads the marker with ifGenerationMatch=0, but the Python
  # binding swallows AlreadyExists: mkdir cannot serve as an atomic create.
  out["mkdir_twice"] = error_of(lambda: gfile.mkdir(f"{bucket}/marked"))
  out["mkdir_over_implied"] = error_of(lambda: gfile.mkdir(f"{bucket}/implied"))
  return out


def put_direct(emulator_url, bucket, name, data):
  query = urllib.parse.urlencode({"uploadType": "media", "name": name})
  request = urllib.request.Request(
      f"{emulator_url}/upload/storage/v1/b/{bucket[len('gs://'):]}/o?{query}", data=data,
      method="POST", headers={"Content-Type": "application/octet-stream"})
  direct = urllib.request.build_opener(urllib.request.ProxyHandler({}))
  with direct.open(request, timeout=30) as response:
    assert response.status == 200, response.status


def overwrite_seen(bucket, emulator_url):
  """Another writer replaces an object with a longer one: the next read sees all of it
  (needs GCS_STAT_CACHE_MAX_AGE=0)."""
  path = f"{bucket}/overwritten.txt"
  write(path, b"short")
  first = read(path)
  put_direct(emulator_url, bucket, "overwritten.txt", b"a much longer second version")
  return {"first": first.decode(), "second": read(path).decode()}


def tfrecords(bucket):
  out = {}
  for compression in ("", "GZIP"):
    path = f"{bucket}/records/{compression or 'plain'}.tfrecord"
    with tf.io.TFRecordWriter(path, options=compression or None) as writer:
      for record in RECORDS:
        writer.write(record)
    dataset = tf.data.TFRecordDataset(path, compression_type=compression)
    out[compression or "plain"] = {
        "records": [b64(r.numpy()) for r in dataset],
        "object": b64(read(path))}
  return out


def checkpoints(bucket):
  directory = f"{bucket}/ckpt"
  step = tf.Variable(0, dtype=tf.int64)
  weights = tf.Variable(np.arange(6, dtype=np.float32).reshape(2, 3))
  manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step, weights=weights),
                                       directory, max_to_keep=2)
  saved = []
  for value in (1, 2, 3):
    step.assign(value)
    weights.assign_add(tf.ones_like(weights))
    saved.append(manager.save())
  restored_step = tf.Variable(0, dtype=tf.int64)
  restored_weights = tf.Variable(tf.zeros((2, 3)))
  checkpoint = tf.train.Checkpoint(step=restored_step, weights=restored_weights)
  checkpoint.restore(tf.train.latest_checkpoint(directory)).assert_consumed()
  return {"saved": saved, "kept": manager.checkpoints,
          "latest": tf.train.latest_checkpoint(directory),
          "files": sorted(gfile.listdir(directory)),
          "step": int(restored_step.numpy()),
          "weights": restored_weights.numpy().tolist()}


class Affine(tf.Module):
  def __init__(self):
    super().__init__()
    self.w = tf.Variable([[0.5, -1.0], [2.0, 0.25], [-0.75, 1.5]])
    self.b = tf.Variable([0.1, -0.2])

  @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
  def __call__(self, x):
    return tf.matmul(x, self.w) + self.b


def saved_model(bucket):
  path = f"{bucket}/saved_model"
  tf.saved_model.save(Affine(), path)
  x = np.array([[1.0, 2.0, 3.0], [-1.0, 0.5, 4.0]], np.float32)
  loaded = tf.saved_model.load(path)
  return {"x": x.tolist(), "y": loaded(tf.constant(x)).numpy().tolist(),
          "w": loaded.w.numpy().tolist(), "b": loaded.b.numpy().tolist(),
          "has_pb": gfile.exists(f"{path}/saved_model.pb")}


def summaries(bucket):
  logdir = f"{bucket}/logs"
  writer = tf.summary.create_file_writer(logdir)
  with writer.as_default():
    for step, value in enumerate((0.5, 0.25, 0.125)):
      tf.summary.scalar("loss", value, step=step)
  writer.close()
  files = gfile.glob(f"{logdir}/events.out.tfevents.*")
  scalars = []
  for path in files:
    for record in tf.data.TFRecordDataset(path):
      event = tf.compat.v1.Event.FromString(record.numpy())
      for value in event.summary.value:
        scalars.append([event.step, value.tag, float(tf.make_ndarray(value.tensor))])
  return {"files": len(files), "scalars": scalars}


def keras_files(bucket):
  import keras  # noqa: PLC0415 - only this check needs Keras
  keras.utils.set_random_seed(1)
  model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
  x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
  model.save(f"{bucket}/keras/model.keras")
  model.save_weights(f"{bucket}/keras/model.weights.h5")
  reloaded = keras.models.load_model(f"{bucket}/keras/model.keras")
  fresh = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
  fresh.load_weights(f"{bucket}/keras/model.weights.h5")
  return {"original": model.predict(x, verbose=0).tolist(),
          "reloaded": reloaded.predict(x, verbose=0).tolist(),
          "weights_loaded": fresh.predict(x, verbose=0).tolist()}


def bad_buckets(readonly, missing):
  out = {}
  out["readonly_read"] = read(f"{readonly}/in.txt").decode()
  out["readonly_write"] = error_of(lambda: write(f"{readonly}/new.txt", b"x"))
  out["readonly_makedirs"] = error_of(lambda: gfile.makedirs(f"{readonly}/folder"))
  out["readonly_remove"] = error_of(lambda: gfile.remove(f"{readonly}/in.txt"))
  out["readonly_rename"] = error_of(lambda: gfile.rename(f"{readonly}/in.txt", f"{readonly}/x"))
  out["readonly_still_there"] = read(f"{readonly}/in.txt").decode()
  out["missing_exists"] = gfile.exists(f"{missing}/x.txt")
  out["missing_root_exists"] = gfile.exists(missing)
  out["missing_root_isdir"] = gfile.isdir(missing)
  out["missing_read"] = error_of(lambda: read(f"{missing}/x.txt"))
  out["missing_listdir"] = error_of(lambda: gfile.listdir(missing))
  out["missing_glob"] = error_of(lambda: gfile.glob(f"{missing}/*"))
  out["missing_mkdir_root"] = error_of(lambda: gfile.mkdir(missing))
  # A write to a missing bucket fails only when the file is closed: open and write pass.
  steps = []
  def write_steps():
    f = gfile.GFile(f"{missing}/x.txt", "wb")
    steps.append("opened")
    f.write(b"x")
    steps.append("written")
    f.close()
    steps.append("closed")
  out["missing_write"] = error_of(write_steps)
  out["missing_write_steps"] = steps
  out["missing_makedirs_running_after_3_s"] = makedirs_hangs(f"{missing}/x/y")
  return out


def makedirs_hangs(path):
  """Whether makedirs of a folder in a missing bucket is still running after 3 s: TensorFlow
  2.21 then asks for the bucket again and again, never ending its walk up to an existing
  folder. It runs in a thread that main() abandons (it leaves by os._exit)."""
  thread = threading.Thread(target=gfile.makedirs, args=(path,), daemon=True)
  thread.start()
  thread.join(3)
  return thread.is_alive()


def main(bucket, readonly, missing, emulator_url):
  results = {
      "files": files_and_folders(bucket),
      "folders": folders(bucket, emulator_url),
      "overwrite": overwrite_seen(bucket, emulator_url),
      "tfrecords": tfrecords(bucket),
      "checkpoints": checkpoints(bucket),
      "saved_model": saved_model(bucket),
      "summaries": summaries(bucket),
      "keras": keras_files(bucket),
      "bad": bad_buckets(readonly, missing),
  }
  print("RESULTS " + json.dumps(results), flush=True)
  sys.stderr.flush()
  # Not a normal exit: the makedirs thread in the missing bucket never ends.
  os._exit(0)


if __name__ == "__main__":
  main(*sys.argv[1:5])
