#!/usr/bin/env python3
"""A cairn remote worker in Python, standard library only.

It serves the function shipping.quote: it long-polls cairn's GraphQL API for tasks (pollTasks),
heartbeats each task while it runs (heartbeatTask), and ends it with completeTask or failTask.

    CAIRN_URL=http://127.0.0.1:8080/graphql CAIRN_TOKEN=... python3 worker.py --name py-1

CAIRN_TOKEN is a worker token: cairn token create --name py --role worker --functions shipping.quote
"""

import argparse
import json
import os
import threading
import time
import urllib.error
import urllib.request

URL = os.environ.get("CAIRN_URL", "http://127.0.0.1:8080/graphql")
TOKEN = os.environ.get("CAIRN_TOKEN", "")
LEASE_MS = int(os.environ.get("CAIRN_LEASE_MS", "30000"))

# Price per kg and currency, by destination.
RATES = {"DE": (4.5, "EUR"), "FI": (6.0, "EUR"), "US": (9.0, "USD")}


class GraphQLError(Exception):
    """An error cairn answered with; code is its extensions.code (CONFLICT: the lease is lost)."""

    def __init__(self, error):
        super().__init__(error.get("message", "error"))
        self.code = (error.get("extensions") or {}).get("code")


class Refused(Exception):
    """The task cannot be done: failed as not retryable, with status 422."""


def gql(query, variables, timeout=90):
    body = json.dumps({"query": query, "variables": variables}).encode()
    headers = {"Content-Type": "application/json"}
    if TOKEN:
        headers["Authorization"] = "Bearer " + TOKEN
    req = urllib.request.Request(URL, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            answer = json.load(resp)
    except urllib.error.HTTPError as e:
        answer = json.load(e)
    if answer.get("errors"):
        raise GraphQLError(answer["errors"][0])
    return answer["data"]


def quote(task, name):
    args = task["input"] or {}
    if task["attempt"] == 1 and args.get("sleepOnFirstAttemptMs"):
        time.sleep(args["sleepOnFirstAttemptMs"] / 1000)
    if args.get("country") not in RATES:
        raise Refused("no rate for country %r" % args.get("country"))
    per_kg, currency = RATES[args["country"]]
    return {"price": round(per_kg * float(args["weightKg"]), 2), "currency": currency, "servedBy": name}


def heartbeat(token, stop):
    # Renew the lease every third of it until the task ends, or the lease is lost.
    while not stop.wait(LEASE_MS / 3000):
        try:
            gql("mutation($t: String!) { heartbeatTask(input: {token: $t}) { deadline } }", {"t": token})
        except GraphQLError as e:
            if e.code == "CONFLICT":
                return
        except OSError:
            pass


def run(task, name):
    stop = threading.Event()
    beat = threading.Thread(target=heartbeat, args=(task["token"], stop), daemon=True)
    beat.start()
    try:
        output = quote(task, name)
    except Refused as e:
        end("mutation($t: String!, $e: TaskErrorInput!) { failTask(input: {token: $t, error: $e}) { id } }",
            {"t": task["token"], "e": {"status": 422, "title": "Refused", "detail": str(e)}})
    except Exception as e:  # a bug or an outage: a retry may help
        end("mutation($t: String!, $e: TaskErrorInput!) { failTask(input: {token: $t, error: $e, retryable: true}) { id } }",
            {"t": task["token"], "e": {"status": 500, "title": "Worker Error", "detail": repr(e)}})
    else:
        end("mutation($t: String!, $o: JSON) { completeTask(input: {token: $t, output: $o}) { id } }",
            {"t": task["token"], "o": output})
    finally:
        stop.set()


def end(query, variables):
    try:
        gql(query, variables)
    except GraphQLError as e:
        if e.code != "CONFLICT":  # CONFLICT: the lease ran out and another worker has the task
            raise


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--name", default="python-worker")
    parser.add_argument("--max", type=int, default=4, help="tasks to lease per poll")
    args = parser.parse_args()
    print("worker %s polling %s" % (args.name, URL), flush=True)
    while True:
        try:
            data = gql(
                "mutation($in: PollTasksInput!) { pollTasks(input: $in) "
                "{ tasks { id token function input attempt deadline workflow { id } } } }",
                {"in": {"functions": ["shipping.quote"], "max": args.max, "waitMs": 20000,
                        "leaseMs": LEASE_MS, "worker": args.name}})
        except (OSError, GraphQLError) as e:
            print("poll failed: %s; retrying" % e, flush=True)
            time.sleep(1)
            continue
        tasks = data["pollTasks"]["tasks"]
        threads = [threading.Thread(target=run, args=(t, args.name)) for t in tasks]
        for t in threads:
            t.start()
        for t in threads:
            t.join()


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        pass
