"""Runs gcp-storage-emulator in memory on 127.0.0.1, on a port the system picks.

Two mends over the package: an empty media upload is stored as zero bytes (the package
fails on it), and ifGenerationMatch is honoured on writes (the package ignores it).

Started by GcsEmulator with the side environment's Python (.venv-gcs), never imported by
the tests: `python emulator_server.py READY_FILE`. When the server listens, its port is
written to READY_FILE (through a temporary name, so a reader never sees half a number).
"""
import logging
import os
import sys
import threading
import time
from http import HTTPStatus

from gcp_storage_emulator import server as emulator
from gcp_storage_emulator.exceptions import NotFound
from gcp_storage_emulator.handlers import objects

_media_upload = objects._media_upload


def media_upload_empty_body(request, response, storage):
  """A zero-byte media upload (the folder marker `makedirs` writes) has no body, which the
  emulator reads as None and then fails on len(None): give it an empty body instead."""
  if request.data is None:
    request._data = b""
  return _media_upload(request, response, storage)


def target_object(request):
  """(bucket, object) a request writes: the destination of a copy or rewrite, the `name`
  of an upload, else the object in the path."""
  params = request.params or {}
  bucket = params.get("dest_bucket_name") or params.get("bucket_name")
  name = params.get("dest_object_id") or params.get("object_id")
  if name is None and request.query.get("name"):
    name = request.query["name"][0]
  return bucket, name


def precondition_failed(request, storage):
  """A 412 message when the request's ifGenerationMatch does not hold, else None. The
  emulator ignores the condition; GCS refuses the write (0: the object must not exist; N:
  its generation must be N). The server answers one request at a time, so the check and
  the write that follows are atomic, as on GCS."""
  wanted = request.query.get("ifGenerationMatch")
  if not wanted:
    return None
  bucket, name = target_object(request)
  try:
    generation = storage.get_file_obj(bucket, name)["generation"]
  except NotFound:
    generation = "0"
  if str(generation) == wanted[0]:
    return None
  return f"ifGenerationMatch={wanted[0]} but {bucket}/{name} is at generation {generation}"


def with_preconditions(handler):
  def checked(request, response, storage, *args, **kwargs):
    message = precondition_failed(request, storage)
    if message is None:
      return handler(request, response, storage, *args, **kwargs)
    response.status = HTTPStatus.PRECONDITION_FAILED
    response.json({"error": {"code": 412, "message": message, "errors": [
        {"domain": "global", "reason": "conditionNotMet", "message": message}]}})
  return checked


def patch_emulator():
  objects._media_upload = media_upload_empty_body
  for handler_set in (handlers for _, handlers in emulator.HANDLERS):
    for method, handler in list(handler_set.items()):
      if handler in (objects.insert, objects.copy, objects.rewrite, objects.delete,
                     objects.compose):
        handler_set[method] = with_preconditions(handler)


def exit_with_owner():
  """Ends this process soon after the process that started it (GCS_EMULATOR_OWNER_PID) is
  gone, so a test run killed outright leaves no server behind."""
  owner = int(os.environ.get("GCS_EMULATOR_OWNER_PID", "0"))
  if not owner:
    return

  def watch():
    while True:
      try:
        os.kill(owner, 0)
      except ProcessLookupError:
        os._exit(0)
      time.sleep(1)

  threading.Thread(target=watch, daemon=True).start()


def main(ready_file):
  exit_with_owner()
  patch_emulator()
  logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                      format="%(asctime)s %(name)s %(levelname)s %(message)s")
  server = emulator.create_server("127.0.0.1", 0, in_memory=True)
  server.start()
  port = server._api._httpd.server_address[1]
  with open(ready_file + ".tmp", "w") as f:
    f.write(str(port))
  os.replace(ready_file + ".tmp", ready_file)
  logging.info("emulator listening on 127.0.0.1:%d", port)
  # The API thread serves until the process is killed (its own join() would stop it).
  threading.Thread.join(server._api)


if __name__ == "__main__":
  main(sys.argv[1])
