"""mitmproxy addon that puts gcp-storage-emulator behind TensorFlow's GCS endpoints.

Loaded by `mitmdump -s proxy_addon.py` (GcsEmulator starts it), never imported by the tests.
TensorFlow's GCS client only talks HTTPS to www.googleapis.com (and storage.googleapis.com);
mitmproxy answers that TLS with its own CA (the client trusts it through CURL_CA_BUNDLE) and
this addon forwards each request to the emulator over plain HTTP on 127.0.0.1. Every other
host is refused, so nothing leaves the machine.

What it mends between the two:
- TensorFlow sends `Transfer-Encoding: chunked` beside `Content-Length`; mitmproxy passes the
  body on whole, and the emulator, seeing the header, would store the chunk framing inside
  the object. The header is dropped.
- Before renaming a folder TensorFlow asks for the bucket's storage layout, which the
  emulator does not know (404); the answer here is a flat namespace, as a bucket without
  hierarchical namespace gives.
- The emulator builds a resumable upload's `Location` with http://; the client must come
  back through the proxy, so it is rewritten to https://.
- Buckets whose names start with "readonly-" refuse every write (403), as a bucket the
  caller may only read would.
"""
import json
import os
import re
import threading
import time

from mitmproxy import ctx, http

GCS_HOSTS = ("www.googleapis.com", "storage.googleapis.com")
READONLY_PREFIX = "readonly-"
# The permission GCS names when it refuses each kind of write.
WRITE_PERMISSIONS = {"POST": "create", "PUT": "create", "PATCH": "update", "DELETE": "delete"}
# The bucket a request writes to is the last /b/<bucket> of its path: for rewriteTo and
# copyTo that is the destination. Object names come percent-encoded (their slashes as %2F),
# so they cannot fake a /b/ segment.
BUCKET_IN_PATH = re.compile(r"/b/([^/?]+)")
STORAGE_LAYOUT = re.compile(r"^/storage/v1/b/([^/?]+)/storageLayout(\?|$)")


def error_response(code, reason, message):
  """A response shaped like GCS's JSON errors."""
  body = {"error": {"code": code, "message": message,
                    "errors": [{"domain": "global", "reason": reason, "message": message}]}}
  return http.Response.make(code, json.dumps(body), {"Content-Type": "application/json"})


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


class GcsEmulatorRoute:
  def load(self, loader):
    loader.add_option("gcs_emulator_port", int, 0, "Port of gcp-storage-emulator on 127.0.0.1.")
    loader.add_option("gcs_ready_file", str, "",
                      "File that receives the proxy's port once it listens.")

  def running(self):
    exit_with_owner()
    self.write_port()

  def write_port(self):
    """Writes the port the proxy listens on (it was asked for port 0) to the ready file."""
    if not ctx.options.gcs_ready_file:
      return
    addrs = ctx.master.addons.get("proxyserver").listen_addrs()
    port = addrs[0][1]
    path = ctx.options.gcs_ready_file
    with open(path + ".tmp", "w") as f:
      f.write(str(port))
    os.replace(path + ".tmp", path)

  def request(self, flow):
    req = flow.request
    if req.pretty_host not in GCS_HOSTS:
      flow.response = error_response(403, "forbidden",
                                     f"the GCS test proxy refuses host {req.pretty_host}")
      return
    req.headers.pop("Transfer-Encoding", None)
    layout = STORAGE_LAYOUT.match(req.path)
    if layout and req.method == "GET":
      bucket = layout.group(1)
      flow.response = http.Response.make(200, json.dumps({
          "kind": "storage#storageLayout", "bucket": bucket, "location": "US",
          "locationType": "multi-region", "hierarchicalNamespace": {"enabled": False}}),
          {"Content-Type": "application/json"})
      return
    buckets = BUCKET_IN_PATH.findall(req.path.split("?")[0])
    if req.method in WRITE_PERMISSIONS and buckets and buckets[-1].startswith(READONLY_PREFIX):
      permission = f"storage.objects.{WRITE_PERMISSIONS[req.method]}"
      flow.response = error_response(
          403, "forbidden",
          f"caller does not have {permission} access to the Google Cloud Storage object. "
          f"Permission '{permission}' denied on resource (bucket {buckets[-1]} is read-only "
          f"in the test emulator)")
      return
    host_header = req.host_header
    req.scheme = "http"
    req.host = "127.0.0.1"
    req.port = ctx.options.gcs_emulator_port
    # The emulator builds upload URLs from the Host header: keep the public one.
    req.host_header = host_header

  def response(self, flow):
    location = flow.response.headers.get("Location")
    if location and location.startswith("http://"):
      flow.response.headers["Location"] = "https://" + location[len("http://"):]


addons = [GcsEmulatorRoute()]
