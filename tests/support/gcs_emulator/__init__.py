"""A local Google Cloud Storage for tests that TensorFlow's own `gs://` client talks to.

Two processes from the side environment .venv-gcs (`make gcs-emulator` builds it; `make
test` does so first): gcp-storage-emulator, in memory on 127.0.0.1, and mitmdump, an HTTPS
proxy on 127.0.0.1 that answers for www.googleapis.com with its own CA and forwards to the
emulator (proxy_addon.py says what it mends). A TensorFlow process started with `env()`
reaches the emulator and nothing else: no network beyond localhost, no root.

  emulator = GcsEmulator()
  if not emulator.available():
    print(emulator.why_unavailable)
  emulator.start()
  emulator.create_bucket("my-bucket")   # then gs://my-bucket/... in a subprocess:
  subprocess.run([...], env={**os.environ, **emulator.env()})
  emulator.stop()

Buckets named "readonly-..." refuse every write through the proxy (403); `put_object`
fills them directly. A bucket nobody created does not exist, as on GCS.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
# The side environment; BERT_GCS_VENV points elsewhere.
DEFAULT_VENV = os.path.join(ROOT, ".venv-gcs")
START_TIMEOUT_S = 30
READONLY_PREFIX = "readonly-"
# Straight to 127.0.0.1, whatever proxy the environment names.
DIRECT = urllib.request.build_opener(urllib.request.ProxyHandler({}))


class GcsEmulatorError(RuntimeError):
  """The emulator or its proxy did not start or stopped answering; the message holds the log."""


class GcsEmulator:
  def __init__(self, venv=None, start_timeout=START_TIMEOUT_S):
    self.venv = venv or os.environ.get("BERT_GCS_VENV") or DEFAULT_VENV
    self.start_timeout = start_timeout
    self.why_unavailable = ""
    self.emulator_port = None
    self.proxy_port = None
    self._workdir = None
    self._procs = []
    self._buckets = 0

  # -- availability -----------------------------------------------------------------

  @property
  def python(self):
    return os.path.join(self.venv, "bin", "python")

  @property
  def mitmdump(self):
    return os.path.join(self.venv, "bin", "mitmdump")

  def available(self):
    """True when the side environment holds both servers; else why_unavailable says why."""
    for path, what in ((self.python, "its Python"), (self.mitmdump, "mitmdump")):
      if not os.access(path, os.X_OK):
        self.why_unavailable = (f"GCS emulator environment {self.venv} lacks {what} ({path}); "
                                f"build it with `make gcs-emulator`")
        return False
    check = subprocess.run([self.python, "-c", "import gcp_storage_emulator.server"],
                           capture_output=True, text=True)
    if check.returncode != 0:
      last_line = (check.stderr.strip().splitlines() or ["no message"])[-1]
      self.why_unavailable = f"{self.python} cannot import gcp_storage_emulator: {last_line}"
      return False
    self.why_unavailable = ""
    return True

  # -- life cycle -------------------------------------------------------------------

  @property
  def log_path(self):
    return os.path.join(self._workdir, "servers.log") if self._workdir else None

  def log(self):
    """Both servers' output so far (empty before start)."""
    if not self.log_path or not os.path.exists(self.log_path):
      return ""
    with open(self.log_path, errors="replace") as f:
      return f.read()

  def start(self):
    """Starts the emulator, then the proxy; returns self. Raises GcsEmulatorError (with the
    log) when either is not listening within start_timeout seconds."""
    if self._procs:
      return self
    if not self.available():
      raise GcsEmulatorError(self.why_unavailable)
    self._workdir = tempfile.mkdtemp(prefix="gcs-emulator-")
    try:
      self._start_emulator()
      self._start_proxy()
      self._wait_answering()
    except BaseException as err:
      log = self.log()
      self.stop(keep_log=True)
      raise GcsEmulatorError(f"the GCS emulator did not start ({err}); log {self.log_path}:\n"
                             f"{log}") from err
    return self

  def _spawn(self, argv):
    log = open(self.log_path, "ab")
    # A session of its own, so stop() ends the process and anything it started.
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True, cwd=self._workdir,
                            env={**os.environ, "GCS_EMULATOR_OWNER_PID": str(os.getpid())})
    log.close()
    self._procs.append(proc)
    return proc

  def _wait_port_file(self, path, proc, what):
    deadline = time.monotonic() + self.start_timeout
    while time.monotonic() < deadline:
      if os.path.exists(path):
        with open(path) as f:
          return int(f.read())
      if proc.poll() is not None:
        raise GcsEmulatorError(f"{what} exited with status {proc.returncode}")
      time.sleep(0.05)
    raise GcsEmulatorError(f"{what} not listening after {self.start_timeout} s")

  def _start_emulator(self):
    ready = os.path.join(self._workdir, "emulator.port")
    proc = self._spawn([self.python, os.path.join(HERE, "emulator_server.py"), ready])
    self.emulator_port = self._wait_port_file(ready, proc, "gcp-storage-emulator")

  def _start_proxy(self):
    ready = os.path.join(self._workdir, "proxy.port")
    confdir = os.path.join(self._workdir, "mitmproxy")
    proc = self._spawn([
        self.mitmdump, "--quiet", "--listen-host", "127.0.0.1", "--listen-port", "0",
        "-s", os.path.join(HERE, "proxy_addon.py"),
        "--set", f"confdir={confdir}",
        "--set", f"gcs_emulator_port={self.emulator_port}",
        "--set", f"gcs_ready_file={ready}",
        # Without these: it resolves the real host before the addon can route the request,
        # fetches the real server's certificate, and refuses TensorFlow's requests that
        # carry both Transfer-Encoding and Content-Length.
        "--set", "connection_strategy=lazy",
        "--set", "upstream_cert=false",
        "--set", "validate_inbound_headers=false",
    ])
    self.proxy_port = self._wait_port_file(ready, proc, "mitmdump")

  @property
  def ca_cert(self):
    return os.path.join(self._workdir, "mitmproxy", "mitmproxy-ca-cert.pem")

  def _wait_answering(self):
    deadline = time.monotonic() + self.start_timeout
    while not os.path.exists(self.ca_cert):
      if time.monotonic() > deadline:
        raise GcsEmulatorError(f"mitmdump wrote no CA certificate {self.ca_cert}")
      time.sleep(0.05)
    with DIRECT.open(self._url("/"), timeout=self.start_timeout) as response:
      if response.read() != b"OK":
        raise GcsEmulatorError("the emulator's health check did not answer OK")
    with socket.create_connection(("127.0.0.1", self.proxy_port), timeout=self.start_timeout):
      pass

  def stop(self, keep_log=False):
    """Ends both processes (their whole process groups) and removes the working folder
    (kept with keep_log=True, for its log)."""
    for proc in reversed(self._procs):
      # The whole group, even when its leader is gone: anything it started goes too.
      kill_group(proc.pid, signal.SIGTERM)
      try:
        proc.wait(timeout=5)
      except subprocess.TimeoutExpired:
        kill_group(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)
    self._procs = []
    self._buckets = 0
    if self._workdir and not keep_log:
      shutil.rmtree(self._workdir, ignore_errors=True)
      self._workdir = None

  def stop_proxy(self):
    """Ends the proxy alone, as a cut network would: every gs:// request of a running
    TensorFlow process fails from then on; the emulator keeps its buckets."""
    proxy = self._procs.pop()
    kill_group(proxy.pid, signal.SIGKILL)
    proxy.wait(timeout=5)
    os.remove(os.path.join(self._workdir, "proxy.port"))

  def start_proxy(self):
    """Starts the proxy again after stop_proxy (at another port: env() names it)."""
    self._start_proxy()
    with socket.create_connection(("127.0.0.1", self.proxy_port), timeout=self.start_timeout):
      pass

  def __enter__(self):
    return self.start()

  def __exit__(self, *exc):
    self.stop()

  def running(self):
    return bool(self._procs) and all(p.poll() is None for p in self._procs)

  # -- for the TensorFlow process ---------------------------------------------------

  def env(self):
    """Environment variables (to add to os.environ) for a process whose TensorFlow should
    use this emulator for gs:// paths."""
    if not self.running():
      raise GcsEmulatorError("the GCS emulator is not running")
    proxy = f"http://127.0.0.1:{self.proxy_port}"
    return {
        "HTTPS_PROXY": proxy,
        "https_proxy": proxy,
        # The proxy's CA: the only certificate the client then trusts.
        "CURL_CA_BUNDLE": self.ca_cert,
        # A bearer token without credentials; and no probe of the metadata server.
        "GOOGLE_AUTH_TOKEN_FOR_TESTING": "emulator-token",
        "NO_GCE_CHECK": "true",
        # No stat cache: another process's overwrite is seen at once, not read truncated.
        "GCS_STAT_CACHE_MAX_AGE": "0",
        # One retry, so a refused request fails in seconds rather than minutes.
        "GCS_RETRY_CONFIG_MAX_RETRIES": "1",
        # Only the googleapis hosts go through the proxy: a multi-worker run's own gRPC
        # connections between localhost workers (gRPC reads these too) go direct.
        "NO_PROXY": "localhost,127.0.0.1", "no_proxy": "localhost,127.0.0.1",
        "no_grpc_proxy": "localhost,127.0.0.1",
    }

  # -- direct access to the emulator (not through TensorFlow) -----------------------

  def _url(self, path, query=None):
    url = f"http://127.0.0.1:{self.emulator_port}{path}"
    return url + ("?" + urllib.parse.urlencode(query) if query else "")

  def _call(self, method, path, query=None, body=None, headers=None):
    request = urllib.request.Request(self._url(path, query), data=body, method=method,
                                     headers=headers or {})
    try:
      with DIRECT.open(request, timeout=30) as response:
        return response.status, response.read()
    except urllib.error.HTTPError as err:
      return err.code, err.read()

  def create_bucket(self, name):
    """Creates bucket `name`; returns "gs://name". A name that exists already is an error."""
    status, body = self._call("POST", "/storage/v1/b", body=json.dumps({"name": name}).encode(),
                              headers={"Content-Type": "application/json"})
    if status != 200:
      raise GcsEmulatorError(f"creating bucket {name}: HTTP {status} {body[:200]!r}")
    return f"gs://{name}"

  def new_bucket(self, label="test", readonly=False):
    """Creates a bucket no one has used in this emulator; returns "gs://name". `label`
    (lower-cased, other characters to "-") helps reading the log; readonly=True makes
    every write through TensorFlow fail with 403."""
    self._buckets += 1
    label = "".join(c if c.isalnum() else "-" for c in label.lower()).strip("-")
    name = f"{READONLY_PREFIX if readonly else ''}b{self._buckets}-{label}"[:63].rstrip("-")
    return self.create_bucket(name)

  def put_object(self, url, data, if_generation_match=None):
    """Writes bytes at gs://bucket/name directly (allowed in read-only buckets too).
    if_generation_match=0 writes only when no such object exists, as on GCS; a refused
    write raises GcsEmulatorError naming HTTP 412."""
    bucket, name = split_url(url)
    query = {"uploadType": "media", "name": name}
    if if_generation_match is not None:
      query["ifGenerationMatch"] = str(if_generation_match)
    status, body = self._call("POST", f"/upload/storage/v1/b/{bucket}/o", query, bytes(data),
                              {"Content-Type": "application/octet-stream"})
    if status != 200:
      raise GcsEmulatorError(f"writing {url}: HTTP {status} {body[:200]!r}")
    return json.loads(body)

  def get_object(self, url):
    """The bytes of gs://bucket/name as the emulator holds them; None when absent."""
    bucket, name = split_url(url)
    status, body = self._call(
        "GET", f"/download/storage/v1/b/{bucket}/o/{urllib.parse.quote(name, safe='')}",
        {"alt": "media"})
    if status == 404:
      return None
    if status != 200:
      raise GcsEmulatorError(f"reading {url}: HTTP {status} {body[:200]!r}")
    return body

  def list_objects(self, url):
    """Sorted names of every object in a bucket (gs://bucket) or under a prefix."""
    bucket, prefix = split_url(url)
    status, body = self._call("GET", f"/storage/v1/b/{bucket}/o",
                              {"prefix": prefix} if prefix else None)
    if status != 200:
      raise GcsEmulatorError(f"listing {url}: HTTP {status} {body[:200]!r}")
    return sorted(item["name"] for item in json.loads(body).get("items", []))

  # -- running TensorFlow against it ------------------------------------------------

  def run(self, argv, check=True, timeout=300, env=None, **kwargs):
    """subprocess.run(argv) with this emulator's environment (and `env` on top), text
    output captured. A command still running after `timeout` seconds is killed and raises
    AssertionError, as does a non-zero exit with check=True; either message shows the
    command's output and the servers' log."""
    try:
      result = subprocess.run(argv, env={**os.environ, **self.env(), **(env or {})},
                              capture_output=True, text=True, timeout=timeout, **kwargs)
    except subprocess.TimeoutExpired as err:
      raise AssertionError(self._report(argv, f"still running after {timeout} s",
                                        err.stdout, err.stderr)) from None
    if check and result.returncode != 0:
      raise AssertionError(self._report(argv, f"exited with status {result.returncode}",
                                        result.stdout, result.stderr))
    return result

  def _report(self, argv, what, stdout, stderr):
    def text(out):
      return out.decode(errors="replace") if isinstance(out, bytes) else (out or "")
    return (f"{argv} {what}\n--- stdout\n{text(stdout)[-20000:]}\n--- stderr\n"
            f"{text(stderr)[-20000:]}\n--- emulator and proxy log\n{self.log()[-20000:]}")


def kill_group(pgid, sig):
  try:
    os.killpg(pgid, sig)
  except ProcessLookupError:
    pass


def split_url(url):
  """("bucket", "object/name") of gs://bucket/object/name."""
  if not url.startswith("gs://"):
    raise ValueError(f"not a gs:// URL: {url}")
  bucket, _, name = url[len("gs://"):].partition("/")
  return bucket, name
