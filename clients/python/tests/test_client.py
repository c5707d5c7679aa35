"""Client against the real cairn: start, get, wait, the operations, events, and errors."""

import threading
import time
import unittest

from cairn_client import CairnError, Client, ConnectionFailed, Worker

from . import support
from .support import deploy


def setUpModule():
    support.require_server()


class ClientTest(support.ServerTest):
    def test_start_get_and_wait(self):
        type_, function = deploy(self.client)
        self.serve({function: lambda input: {"echo": input}})
        started = self.client.start_workflow(type_, {"a": 1}, business_key="order-7", external_id="ext-1")
        self.assertEqual(type_, started["type"])
        self.assertEqual("order-7", started["businessKey"])
        self.assertEqual(started["id"], self.client.get_workflow(started["id"])["id"])
        ended = self.client.wait(started["id"], timeout=60)
        self.assertEqual("FINISHED", ended["status"])
        self.assertEqual({"echo": {"a": 1}}, ended["output"])
        again = self.client.start_workflow(type_, {"a": 2}, external_id="ext-1")
        self.assertEqual(started["id"], again["id"], "the same external ID returns the workflow already started")

    def test_wait_times_out(self):
        type_, _ = deploy(self.client)  # nobody serves its function
        wf = self.client.start_workflow(type_)
        # cairn pings this suite's streams every second (--ping-interval 1s): the pings must not
        # hold wait past its timeout (they once did, for as long as the workflow did not end).
        outcome = []

        def waiting():
            try:
                outcome.append(self.client.wait(wf["id"], timeout=3.5))
            except Exception as e:  # noqa: BLE001 (the test reads it)
                outcome.append(e)
        t0 = time.monotonic()
        waiter = threading.Thread(target=waiting, daemon=True)
        waiter.start()
        waiter.join(30)
        self.assertFalse(waiter.is_alive(), "wait(timeout=3.5) still waited after 30 s")
        self.assertIsInstance(outcome[0], TimeoutError)
        self.assertRegex(str(outcome[0]), r"did not end within 3\.5s \(last seen [A-Z]+\)")
        self.assertLess(time.monotonic() - t0, 10)

    def test_pause_resume_cancel(self):
        type_, _ = deploy(self.client)
        wf = self.client.start_workflow(type_)
        paused = self.client.pause(wf["id"], reason="looking")
        self.assertEqual("PAUSED", paused["status"])
        resumed = self.client.resume(wf["id"])
        self.assertNotEqual("PAUSED", resumed["status"])
        self.client.cancel(wf["id"], reason="not needed")
        self.assertEqual("CANCELLED", self.client.wait(wf["id"], timeout=30)["status"])
        with self.assertRaises(CairnError) as caught:
            self.client.pause(wf["id"])
        self.assertEqual("CONFLICT", caught.exception.code)

    def test_signal(self):
        source = """
document: {dsl: '1.0.0', namespace: py, name: %s, version: '1.0.0'}
do:
  - approval:
      listen:
        to:
          one:
            with:
              type: approve
"""
        name = "signal-" + str(int(time.time() * 1000))
        self.client.graphql("mutation($s: String!) { deployDefinition(input: {source: $s}) { created } }", {"s": source % name})
        wf = self.client.start_workflow("py." + name)
        deadline = time.monotonic() + 30
        while self.client.get_workflow(wf["id"])["waitingForSignal"] != "approve":
            self.assertLess(time.monotonic(), deadline, "the workflow never waited for its signal")
            time.sleep(0.05)
        self.client.signal(wf["id"], "approve", {"by": "ann"})
        self.assertEqual("FINISHED", self.client.wait(wf["id"], timeout=30)["status"])

    def test_retry_runs_a_failed_workflow_again(self):
        type_, function = deploy(self.client)
        calls = []

        def flaky(input):
            calls.append(input)
            if len(calls) == 1:
                raise RuntimeError("first call fails")
            return "second call works"
        self.serve({function: flaky})
        wf = self.client.start_workflow(type_)
        self.assertEqual("FAILED", self.client.wait(wf["id"], timeout=60)["status"])
        self.client.retry(wf["id"], reason="fixed")
        ended = self.client.wait(wf["id"], timeout=60)
        self.assertEqual("FINISHED", ended["status"], ended)
        self.assertEqual("second call works", ended["output"])

    def test_errors_carry_code_and_field(self):
        with self.assertRaises(CairnError) as caught:
            self.client.start_workflow("no.such-type")
        self.assertEqual("INVALID_INPUT", caught.exception.code)
        self.assertEqual("type", caught.exception.field)
        with self.assertRaises(CairnError) as caught:
            self.client.get_workflow("not-an-id")
        self.assertEqual("INVALID_INPUT", caught.exception.code)
        self.assertEqual("id", caught.exception.field)
        with self.assertRaises(TypeError):
            self.client.start_workflow("x", nonsense=1)

    def test_wrong_url_or_token_is_one_clear_error(self):
        dead = Client("http://127.0.0.1:9/graphql")
        t0 = time.monotonic()
        with self.assertRaises(ConnectionFailed) as caught:
            dead.get_workflow("x")
        self.assertIn("http://127.0.0.1:9/graphql", str(caught.exception))
        with self.assertRaises(ConnectionFailed):
            Worker(dead, {"f": lambda _: None}).start()
        self.assertLess(time.monotonic() - t0, 10, "no retries at the first call")

        wrong_path = Client(support.URL.replace("/graphql", "/nothing"), support.ADMIN_TOKEN)
        with self.assertRaises(ConnectionFailed) as caught:
            wrong_path.get_workflow("x")
        self.assertIn("not cairn's GraphQL endpoint", str(caught.exception))

        wrong_token = Client(support.URL, "not-a-token")
        for call in (lambda: wrong_token.start_workflow("x"), lambda: Worker(wrong_token, {"f": lambda _: None}).start(),
                     lambda: next(wrong_token.events())):
            with self.assertRaises(CairnError) as caught:
                call()
            self.assertEqual("UNAUTHENTICATED", caught.exception.code)

        with self.assertRaises(ConnectionFailed):
            Client("ftp://example.com/graphql")

    def test_events_resume_after_a_dropped_connection(self):
        type_, function = deploy(self.client)
        self.serve({function: lambda input: input})
        proxy = support.Proxy(support.URL)
        self.addCleanup(proxy.close)
        watcher = Client(proxy.url, support.ADMIN_TOKEN)
        events, errors, ids = [], [], []
        first = threading.Event()
        total = 6

        def follow():
            try:
                for e in watcher.events(filter={"types": [type_]}):
                    events.append(e)
                    first.set()
                    finished = {x["workflowId"] for x in events if x["status"] == "FINISHED"}
                    if len(ids) == total and finished.issuperset(ids):
                        return
            except Exception as e:  # reported below
                errors.append(e)
                first.set()
        follower = threading.Thread(target=follow, daemon=True)
        follower.start()
        # Events come from the moment the subscription is in place: start workflows until one shows.
        while not first.wait(0.2):
            self.client.start_workflow(type_, {"n": -1})
        def cut():  # cut the stream: it resumes from its cursor, on a new connection
            before = proxy.accepted
            proxy.drop()
            deadline = time.monotonic() + 30
            while proxy.accepted == before:
                self.assertLess(time.monotonic(), deadline, "the stream did not resume")
                time.sleep(0.01)
        cut()
        for n in range(total):
            ids.append(self.client.start_workflow(type_, {"n": n})["id"])
            if n == 2:
                cut()
        follower.join(60)
        self.assertFalse(follower.is_alive(), "the events stopped: %s" % events)
        self.assertEqual([], errors)
        self.assertGreaterEqual(proxy.accepted, 3, "the stream was not cut and resumed")
        cursors = [e["cursor"] for e in events]
        self.assertEqual(len(cursors), len(set(cursors)), "an event came twice")
        by_workflow = {}
        for e in events:
            by_workflow.setdefault(e["workflowId"], []).append(e["type"])
        for wid in ids:
            self.assertIn(wid, by_workflow, "no event of %s" % wid)
            self.assertEqual("CREATED", by_workflow[wid][0], "the first event of %s was missed: %s" % (wid, by_workflow[wid]))

        # after: every event after a cursor, then live ones.
        replay = []
        for e in self.client.events(filter={"types": [type_]}, after=cursors[0]):
            replay.append(e["cursor"])
            if len(replay) == len(cursors) - 1:
                break
        self.assertEqual(cursors[1:], replay)


if __name__ == "__main__":
    unittest.main()
