"""Measures a Worker with default settings serving no-op tasks against a running cairn.

    python3 -m cairn_client.bench --url http://127.0.0.1:8080/graphql [--token T] [--tasks 20000]

It deploys a document calling the function bench.remote_noop, starts --tasks workflows of it,
waits until each waits for its task, then runs a Worker until it has completed them all and
prints the tasks completed per second (and how long the workflows took to finish after it)."""

from __future__ import annotations

import argparse
import json
import sys
import time

from . import Client, Worker
from .worker import DEFAULT_CONCURRENCY

FUNCTION = "bench.remote_noop"
DOCUMENT = """
document: {dsl: '1.0.0', namespace: bench, name: remote-noop, version: '1.0.0'}
do:
  - work:
      call: bench.remote_noop
"""
TYPE = "bench.remote-noop"


def count(client: Client, status: str, since: str) -> int:
    data = client.graphql("query($f: WorkflowFilter) { workflowStats(filter: $f) { byStatus { status count } } }",
                          {"f": {"types": [TYPE], "statuses": [status], "createdAfter": since}})
    return sum(s["count"] for s in data["workflowStats"]["byStatus"])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080/graphql")
    parser.add_argument("--token", default=None, help="an admin token, when cairn runs with --auth")
    parser.add_argument("--tasks", type=int, default=20000)
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY)
    args = parser.parse_args(argv)

    client = Client(args.url, args.token)
    client.graphql("mutation($s: String!) { deployDefinition(input: {source: $s}) { created } }", {"s": DOCUMENT})
    since = client.graphql("query { workflows(first: 1) { nodes { created } } }")["workflows"]["nodes"]
    since = since[0]["created"] if since else "1970-01-01T00:00:00Z"
    t0 = time.monotonic()
    for i in range(0, args.tasks, 1000):
        n = min(1000, args.tasks - i)
        client.graphql("mutation($in: StartWorkflowsInput!) { startWorkflows(input: $in) { results { created } } }",
                       {"in": {"workflows": [{"type": TYPE} for _ in range(n)]}})
    while count(client, "WAITING", since) < args.tasks:
        time.sleep(0.2)
    print("started %d workflows, each waiting for its task, in %.1fs" % (args.tasks, time.monotonic() - t0), file=sys.stderr)

    worker = Worker(client, {FUNCTION: lambda _: None}, concurrency=args.concurrency, name="bench")
    t1 = time.monotonic()
    cpu0 = time.process_time()
    worker.start()
    while worker.completed + worker.failed + worker.dropped < args.tasks:
        time.sleep(0.01)
    served = time.monotonic() - t1
    cpu = time.process_time() - cpu0
    # The worker serves on until every workflow has finished: tasks of an earlier run (its worker
    # killed) may have come back to it too.
    while count(client, "FINISHED", since) < args.tasks:
        time.sleep(0.2)
    finished = time.monotonic() - t1
    worker.stop()
    result = {"tasks": args.tasks, "concurrency": args.concurrency, "seconds": round(served, 3),
              "tasks_per_second": round(args.tasks / served),
              "worker_cpu_seconds": round(cpu, 3), "failed": worker.failed, "dropped": worker.dropped,
              "all_finished_seconds": round(finished, 3)}
    print(json.dumps(result))
    return 0 if worker.failed == 0 and worker.dropped == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
