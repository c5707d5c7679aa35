"""Worker against the real cairn: failures as Problems, heartbeats, a killed worker, concurrent
workers, worker tokens, and stop()."""

import os
import signal
import subprocess
import sys
import threading
import time
import unittest

from cairn_client import CairnError, Client, Problem, Worker, current_task

from . import support
from .support import CATCH, deploy, remote_attempts


def setUpModule():
    support.require_server()


class WorkerTest(support.ServerTest):
    def test_a_raising_function_fails_its_task_and_the_worker_goes_on(self):
        type_, function = deploy(self.client)

        def quote(input):
            if input.get("weightKg", 0) < 0:
                raise ValueError("weight %s is negative" % input["weightKg"])
            return {"price": 2 * input["weightKg"]}
        worker = self.serve({function: quote})
        bad = self.client.start_workflow(type_, {"weightKg": -1})
        failed = self.client.wait(bad["id"], timeout=60)
        self.assertEqual("FAILED", failed["status"])
        self.assertIn('"title":"ValueError"', failed["lastError"])
        self.assertIn('"detail":"weight -1 is negative"', failed["lastError"])
        good = self.client.start_workflow(type_, {"weightKg": 3})
        self.assertEqual({"price": 6}, self.client.wait(good["id"], timeout=60)["output"])
        worker.stop()  # the counts are the worker's once it has read cairn's answers
        self.assertEqual((1, 1), (worker.failed, worker.completed))

    def test_a_problem_is_what_the_workflow_catches(self):
        type_, function = deploy(self.client, CATCH)

        def refuse(input):
            raise Problem(status=422, title="Refused", detail="no rate for %s" % input["country"],
                          type="https://example.com/no-rate")
        self.serve({function: refuse})
        wf = self.client.start_workflow(type_, {"country": "XX"})
        ended = self.client.wait(wf["id"], timeout=60)
        self.assertEqual("FINISHED", ended["status"], ended)
        problem = ended["output"]["problem"]
        self.assertEqual(("Refused", 422, "no rate for XX", "https://example.com/no-rate"),
                         (problem["title"], problem["status"], problem["detail"], problem["type"]))

    def test_stop_right_after_start_ends_the_polls_at_once(self):
        _, function = deploy(self.client)
        for attempt in range(8):
            worker = Worker(self.client, {function: lambda input: input}, wait_ms=20000)
            worker.start()
            t0 = time.monotonic()
            worker.stop()
            # A poll whose connection was not open yet when stop() came kept stop() waiting for
            # the whole of its wait_ms (20 s) most of the times.
            self.assertLess(time.monotonic() - t0, 5.0, "stop() #%d waited for a long poll" % attempt)

    def test_heartbeats_keep_a_long_task(self):
        type_, function = deploy(self.client)
        calls = []

        def slow(input):
            calls.append(current_task().attempt)
            time.sleep(5.0)  # more than three leases of 1.5 s
            return "done"
        self.serve({function: slow}, lease_ms=1500)
        wf = self.client.start_workflow(type_)
        ended = self.client.wait(wf["id"], timeout=60)
        self.assertEqual(("FINISHED", "done"), (ended["status"], ended["output"]))
        self.assertEqual([1], calls, "the task was offered again while its worker heartbeated it")
        self.assertEqual([(1, "SUCCEEDED")], remote_attempts(self.client, wf["id"], function))

    def test_a_killed_workers_task_is_offered_again_and_completed_once(self):
        type_, function = deploy(self.client)
        script = (
            "import sys, time\n"
            "from cairn_client import Client, Worker\n"
            "def hold(input):\n"
            "    print('holding', flush=True)\n"
            "    time.sleep(600)\n"
            "Worker(Client(sys.argv[1], sys.argv[2]), {sys.argv[3]: hold}, lease_ms=1500, name='doomed').run()\n"
        )
        env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        doomed = subprocess.Popen([sys.executable, "-c", script, support.URL, support.ADMIN_TOKEN, function],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, text=True)
        self.addCleanup(doomed.wait)
        self.addCleanup(doomed.kill)
        wf = self.client.start_workflow(type_)
        lines = []
        while not lines or lines[-1] not in ("holding\n", ""):
            lines.append(doomed.stdout.readline())
        self.assertEqual("holding\n", lines[-1], "the worker did not take the task: %s" % "".join(lines))
        doomed.send_signal(signal.SIGKILL)
        doomed.wait()

        calls = []

        def serve(input):
            calls.append(current_task().attempt)
            return "served once"
        self.serve({function: serve}, name="survivor")
        ended = self.client.wait(wf["id"], timeout=60)
        self.assertEqual(("FINISHED", "served once"), (ended["status"], ended["output"]))
        self.assertEqual([2], calls, "the task came back once its lease ran out, as attempt 2")
        attempts = remote_attempts(self.client, wf["id"], function)
        self.assertEqual(1, sum(1 for _, status in attempts if status == "SUCCEEDED"), attempts)
        self.assertIn((2, "SUCCEEDED"), attempts)

    def test_concurrent_workers_never_get_the_same_task(self):
        type_, function = deploy(self.client)
        served = []
        lock = threading.Lock()

        def record(input):
            with lock:
                served.append((current_task().id, input["n"]))
            time.sleep(0.005)
            return input["n"]
        workers = [self.serve({function: record}, client=Client(support.URL, support.ADMIN_TOKEN), concurrency=4, name="w%d" % i)
                   for i in range(3)]
        n = 150
        data = self.client.graphql("mutation($in: StartWorkflowsInput!) { startWorkflows(input: $in) { results { workflow { id } } } }",
                                   {"in": {"workflows": [{"type": type_, "input": {"n": i}} for i in range(n)]}})
        ids = [r["workflow"]["id"] for r in data["startWorkflows"]["results"]]
        for i, wid in enumerate(ids):
            ended = self.client.wait(wid, timeout=120)
            self.assertEqual(("FINISHED", i), (ended["status"], ended["output"]))
        for w in workers:
            w.stop()
        self.assertEqual(n, len(served))
        self.assertEqual(n, len({task_id for task_id, _ in served}), "a task was served twice")
        self.assertEqual(n, sum(w.completed for w in workers))
        self.assertEqual(0, sum(w.dropped + w.failed for w in workers))
        self.assertGreater(sum(1 for w in workers if w.completed > 0), 1, "one worker served everything")

    def test_a_worker_token_serves_its_function_only(self):
        type_, _ = deploy(self.client, function=support.WORKER_FUNCTION)
        worker_client = Client(support.URL, support.WORKER_TOKEN)
        self.serve({support.WORKER_FUNCTION: lambda input: "served with a worker token"}, client=worker_client)
        wf = self.client.start_workflow(type_)
        self.assertEqual("served with a worker token", self.client.wait(wf["id"], timeout=60)["output"])
        with self.assertRaises(CairnError) as caught:
            Worker(worker_client, {"another.function": lambda _: None}).start()
        self.assertEqual("FORBIDDEN", caught.exception.code)
        with self.assertRaises(CairnError) as caught:
            worker_client.start_workflow(type_)
        self.assertEqual("FORBIDDEN", caught.exception.code)

    def test_stop_finishes_the_tasks_it_holds(self):
        type_, function = deploy(self.client)
        entered = threading.Semaphore(0)

        def slow(input):
            entered.release()
            time.sleep(1.0)
            return input
        worker = Worker(self.client, {function: slow}, concurrency=3)
        worker.start()
        ids = [self.client.start_workflow(type_, i)["id"] for i in ({"i": 1}, {"i": 2}, {"i": 3})]
        for _ in ids:
            self.assertTrue(entered.acquire(timeout=30), "the worker did not take the three tasks")
        t0 = time.monotonic()
        worker.stop()
        self.assertLess(time.monotonic() - t0, 15)
        self.assertEqual(3, worker.completed)
        for wid in ids:
            self.assertEqual("FINISHED", self.client.wait(wid, timeout=60)["status"])

    def test_an_output_that_is_not_json_fails_the_task(self):
        type_, function = deploy(self.client)
        self.serve({function: lambda input: {"when": object()}})
        wf = self.client.start_workflow(type_)
        ended = self.client.wait(wf["id"], timeout=60)
        self.assertEqual("FAILED", ended["status"])
        self.assertIn("Output Not JSON", ended["lastError"])


if __name__ == "__main__":
    unittest.main()
