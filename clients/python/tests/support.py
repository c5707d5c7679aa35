"""What the suites share: the server under test (from the environment the Go test sets), documents
deployed per test, and a TCP proxy that can drop connections."""

import faulthandler
import os
import socket
import threading
import unittest
import uuid

from cairn_client import Client, Worker

URL = os.environ.get("CAIRN_URL", "")
ADMIN_TOKEN = os.environ.get("CAIRN_ADMIN_TOKEN", "")
WORKER_TOKEN = os.environ.get("CAIRN_WORKER_TOKEN", "")
WORKER_FUNCTION = os.environ.get("CAIRN_WORKER_FUNCTION", "")


def require_server():
    if not URL:
        raise unittest.SkipTest("CAIRN_URL is not set: run these tests through go test ./clients/ (or set CAIRN_URL and CAIRN_ADMIN_TOKEN)")


def admin() -> Client:
    return Client(URL, ADMIN_TOKEN)


class ServerTest(unittest.TestCase):
    """A test with an admin client (self.client) and serve(), which starts a worker stopped when
    the test ends."""

    def setUp(self):
        # A test still running after two minutes hangs: print every thread's stack and exit, so
        # the output says where (rather than the Go test's bound killing the suite silently).
        faulthandler.dump_traceback_later(120, exit=True)
        self.addCleanup(faulthandler.cancel_dump_traceback_later)
        self.client = admin()
        self.addCleanup(self.client.close)

    def serve(self, functions, client=None, **options):
        worker = Worker(client or self.client, functions, **options)
        worker.start()
        self.addCleanup(worker.stop)
        return worker


CALL = """
document: {{dsl: '1.0.0', namespace: py, name: {name}, version: '1.0.0'}}
do:
  - work:
      call: {function}
"""

CATCH = """
document: {{dsl: '1.0.0', namespace: py, name: {name}, version: '1.0.0'}}
do:
  - work:
      try:
        - call:
            call: {function}
      catch:
        errors:
          with:
            status: 422
        as: problem
        do:
          - caught:
              set:
                problem: ${{ $problem }}
              then: end
"""


def deploy(client: Client, template: str = CALL, function: str = None):
    """Deploys a fresh document calling a function of its own (or function); returns its type and
    the function's name."""
    name = "t-" + uuid.uuid4().hex[:10]
    function = function or "py." + name
    source = template.format(name=name, function=function)
    client.graphql("mutation($s: String!) { deployDefinition(input: {source: $s}) { created } }", {"s": source})
    return "py." + name, function


def remote_attempts(client: Client, workflow_id: str, function: str):
    """The (attempt, status) of each task instance of the function's remote task, oldest first."""
    data = client.graphql("query($id: ID!) { workflow(id: $id) { taskInstances(first: 50) { nodes { taskType attempt status } } } }",
                          {"id": workflow_id})
    nodes = data["workflow"]["taskInstances"]["nodes"]
    return sorted((n["attempt"], n["status"]) for n in nodes if n["taskType"] == "remote:" + function)


class Proxy:
    """Forwards TCP connections to cairn; drop() cuts every open one."""

    def __init__(self, target_url: str):
        from urllib.parse import urlsplit
        parts = urlsplit(target_url)
        self.target = (parts.hostname, parts.port)
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.url = "http://127.0.0.1:%d%s" % (self.listener.getsockname()[1], parts.path)
        self.lock = threading.Lock()
        self.open = []
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            with self.lock:
                self.open += [client, upstream]
                self.accepted += 1
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(src, dst):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def drop(self):
        with self.lock:
            conns, self.open = self.open, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def close(self):
        self.listener.close()
        self.drop()
