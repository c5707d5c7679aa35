#!/usr/bin/env python3
"""A cairn remote worker in Python, with cairn_client (clients/python, standard library only).

It serves the function shipping.quote: the library long-polls cairn for its tasks, heartbeats
them while they run, completes them in batches, and fails a task with the Problem its function
raises.

    CAIRN_URL=http://127.0.0.1:8080/graphql CAIRN_TOKEN=... python3 worker.py --name py-1

CAIRN_TOKEN is a worker token: cairn token create --name py --role worker --functions shipping.quote
"""

import argparse
import os
import sys
import time

try:
    import cairn_client
except ImportError:  # run from a clone without installing it: the library next door
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "clients", "python"))
    import cairn_client

URL = os.environ.get("CAIRN_URL", "http://127.0.0.1:8080/graphql")
TOKEN = os.environ.get("CAIRN_TOKEN") or None
LEASE_MS = int(os.environ.get("CAIRN_LEASE_MS", "30000"))

# Price per kg and currency, by destination.
RATES = {"DE": (4.5, "EUR"), "FI": (6.0, "EUR"), "US": (9.0, "USD")}


def quoter(name):
    def quote(args):
        args = args or {}
        if cairn_client.current_task().attempt == 1 and args.get("sleepOnFirstAttemptMs"):
            time.sleep(args["sleepOnFirstAttemptMs"] / 1000)
        if args.get("country") not in RATES:
            # Not retryable: the workflow's try catches it (status 422).
            raise cairn_client.Problem(status=422, title="Refused", detail="no rate for country %r" % args.get("country"))
        per_kg, currency = RATES[args["country"]]
        return {"price": round(per_kg * float(args["weightKg"]), 2), "currency": currency, "servedBy": name}
    return quote


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="python-worker")
    parser.add_argument("--concurrency", type=int, default=4, help="tasks run at once")
    args = parser.parse_args()
    client = cairn_client.Client(URL, TOKEN)
    worker = cairn_client.Worker(client, {"shipping.quote": quoter(args.name)}, concurrency=args.concurrency,
                                 lease_ms=LEASE_MS, name=args.name)
    print("worker %s polling %s" % (args.name, URL), flush=True)
    worker.run()  # until Ctrl-C: then it finishes the tasks it holds


if __name__ == "__main__":
    main()
