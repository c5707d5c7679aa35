"""Worker serves remote functions: it long-polls cairn for their tasks, runs them in a pool of
threads, heartbeats the long ones, and ends them: outputs in batches (completeTasks), failures
as Problems (failTask). A task's token is ended at most once; one whose lease was lost (CONFLICT)
is dropped."""

from __future__ import annotations

import heapq
import json
import logging
import os
import queue
import socket
import threading
import time
from typing import Any, Callable, Dict, List, Optional

from .client import Client
from .errors import CairnError, ConnectionFailed, Problem

log = logging.getLogger("cairn_client.worker")

#: Tasks run at once by default (threads of the pool); each poll asks for the free ones.
DEFAULT_CONCURRENCY = 64
#: Polls in flight at once by default: one is answered while another waits.
DEFAULT_POLLERS = 2
#: The most tasks one poll leases (cairn's limit).
MAX_POLL = 100
#: The most outputs one completeTasks request carries (cairn's limit).
MAX_COMPLETE_BATCH = 500

_POLL = ("mutation($in: PollTasksInput!) { pollTasks(input: $in) "
         "{ tasks { id token function input attempt deadline workflow { id } } } }")
_HEARTBEAT = "mutation($t: String!) { heartbeatTask(input: {token: $t}) { deadline } }"
_COMPLETE_MANY = ("mutation($r: [CompleteTaskInput!]!) { completeTasks(input: {results: $r}) "
                  "{ results { id status code } } }")
_COMPLETE_ONE = "mutation($t: String!, $o: JSON) { completeTask(input: {token: $t, output: $o}) { id status } }"
_FAIL = ("mutation($t: String!, $e: TaskErrorInput!, $r: Boolean) "
         "{ failTask(input: {token: $t, error: $e, retryable: $r}) { id status } }")


class Task:
    """A leased task, as current_task() returns it to the function running it."""

    __slots__ = ("id", "token", "function", "input", "attempt", "deadline", "workflow_id", "lost",
                 "_next_beat")

    def __init__(self, raw: dict, beat_s: float):
        self.id: str = raw["id"]
        self.token: str = raw["token"]
        self.function: str = raw["function"]
        self.input: Any = raw.get("input")
        self.attempt: int = raw["attempt"]
        self.deadline: str = raw["deadline"]
        self.workflow_id: Optional[str] = (raw.get("workflow") or {}).get("id")
        #: True once a heartbeat found the lease lost: the output will not be written.
        self.lost = False
        self._next_beat = time.monotonic() + beat_s

    def __repr__(self) -> str:
        return "Task(%s %s attempt %d)" % (self.function, self.id, self.attempt)


_local = threading.local()


def current_task() -> Optional[Task]:
    """The task the calling function serves (its id, attempt, workflow_id...), or None outside one."""
    return getattr(_local, "task", None)


class _Stopped(Exception):
    pass


class Worker:
    """Serves the functions (name → callable taking the task's input and returning its output, a
    JSON value) for cairn's remote tasks.

    concurrency is how many tasks run at once (threads); pollers how many polls may be in flight at
    once; lease_ms each lease's length (heartbeats renew it every third of it); wait_ms how long one
    poll waits for tasks; name the worker's name in cairn (host-pid by default).

    A function that raises Problem fails its task with those details (retryable or not); any other
    exception fails it as retryable with the exception's type as title and its message as detail,
    and the worker goes on.
    """

    def __init__(self, client: Client, functions: Dict[str, Callable[[Any], Any]],
                 concurrency: int = DEFAULT_CONCURRENCY, lease_ms: int = 30000, wait_ms: int = 20000,
                 name: Optional[str] = None, pollers: int = DEFAULT_POLLERS):
        if not functions:
            raise ValueError("Worker needs at least one function")
        if concurrency < 1 or pollers < 1:
            raise ValueError("concurrency and pollers must be at least 1")
        self.client = client
        self.functions = dict(functions)
        self.concurrency = concurrency
        self.pollers = min(pollers, concurrency)
        self.lease_ms = lease_ms
        self.wait_ms = wait_ms
        self.name = name or "%s-%d" % (socket.gethostname(), os.getpid())
        self._transport = client._transport
        self._beat_s = lease_ms / 3000.0
        self._lock = threading.Condition()
        self._free = concurrency        # pool threads not running a task nor holding one to run
        self._unsent = 0                # ended tasks whose result is not yet written
        self._held: Dict[str, Task] = {}  # token → task, from the lease until its end is written
        self._runs: "queue.Queue[Optional[Task]]" = queue.Queue()
        self._ends: "queue.Queue[Optional[tuple]]" = queue.Queue()
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._poll_conns: set = set()  # the connections of the polls in flight, closed by stop()
        self._threads: List[threading.Thread] = []
        self._pollers: List[threading.Thread] = []
        self._beater: Optional[threading.Thread] = None
        #: Counts, for benchmarks and tests: tasks completed, failed, and dropped (lease lost).
        self.completed = 0
        self.failed = 0
        self.dropped = 0

    # Life cycle.

    def start(self) -> None:
        """Polls once in the caller's thread (a wrong URL or token raises here), then serves in
        background threads until stop()."""
        if self._threads:
            raise RuntimeError("the worker is already started")
        self._stopping.clear()
        self._stopped.clear()
        first = self._poll(0, min(self.concurrency, MAX_POLL))
        self._threads = [threading.Thread(target=self._closing, args=(self._completing,), name="cairn-completer", daemon=True)]
        self._threads += [threading.Thread(target=self._run_loop, name="cairn-run-%d" % i, daemon=True)
                          for i in range(self.concurrency)]
        self._beater = threading.Thread(target=self._closing, args=(self._heartbeating,), name="cairn-heartbeat", daemon=True)
        pollers = [threading.Thread(target=self._closing, args=(self._polling, first if i == 0 else []),
                                    name="cairn-poller-%d" % i, daemon=True) for i in range(self.pollers)]
        for t in self._threads + [self._beater] + pollers:
            t.start()
        self._pollers = pollers

    def stop(self) -> None:
        """Stops polling, runs the tasks the worker holds to their end, writes their results and
        returns."""
        if not self._threads:
            return
        with self._lock:
            self._stopping.set()
            conns = list(self._poll_conns)
            self._lock.notify_all()
        for conn in conns:  # registered connected (see Transport.request): shut, the poll ends at once
            sock = conn.sock
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
        completer, runners = self._threads[0], self._threads[1:]
        for poller in self._pollers:
            poller.join()
        for _ in runners:
            self._runs.put(None)
        for t in runners:
            t.join()
        self._ends.put(None)
        completer.join()
        self._threads = []
        self._stopped.set()
        with self._lock:
            self._lock.notify_all()
        if self._beater is not None:
            self._beater.join()
            self._beater = None

    def run(self) -> None:
        """start(), then serve until stop() is called from another thread or Ctrl-C."""
        self.start()
        try:
            while not self._stopped.wait(0.5):
                pass
        except KeyboardInterrupt:
            self.stop()

    def _closing(self, loop: Callable[..., None], *args: Any) -> None:
        """Runs a thread's loop, then closes the thread's kept-alive connection."""
        try:
            loop(*args)
        finally:
            self._transport.close()

    # Polling.

    def _poll(self, wait_ms: int, n: int) -> List[Task]:
        def hold(conn):
            with self._lock:
                if self._stopping.is_set() and wait_ms > 0:
                    raise _Stopped()
                self._poll_conns.add(conn)
                polling.append(conn)
        polling: list = []
        try:
            data = self._transport.request(
                _POLL, {"in": {"functions": sorted(self.functions), "max": n, "waitMs": wait_ms,
                               "leaseMs": self.lease_ms, "worker": self.name}},
                timeout=wait_ms / 1000.0 + 30, on_connection=hold)
        finally:
            with self._lock:
                self._poll_conns.difference_update(polling)
        tasks = [Task(raw, self._beat_s) for raw in data["pollTasks"]["tasks"]]
        with self._lock:
            for t in tasks:
                self._held[t.token] = t
        return tasks

    def _polling(self, first: List[Task]) -> None:
        with self._lock:
            self._free -= len(first)
        for t in first:
            self._runs.put(t)
        while True:
            with self._lock:
                # Poll for the free threads, unless too many results wait to be written.
                while not self._stopping.is_set() and (self._free == 0 or self._unsent >= MAX_COMPLETE_BATCH):
                    self._lock.wait()
                if self._stopping.is_set():
                    return
                n = min(self._free, MAX_POLL)
                self._free -= n
            try:
                tasks = self._poll(self.wait_ms, n)
            except (_Stopped, ConnectionFailed, CairnError) as e:
                with self._lock:
                    self._free += n
                if self._stopping.is_set():
                    return
                log.warning("worker %s: poll failed; retrying in a second: %s", self.name, e)
                self._stopping.wait(1.0)
                continue
            with self._lock:
                self._free += n - len(tasks)
            for t in tasks:
                self._runs.put(t)

    # Running.

    def _run_loop(self) -> None:
        while True:
            task = self._runs.get()
            if task is None:
                return
            self._ends.put(self._run(task))
            with self._lock:
                self._free += 1
                self._unsent += 1
                self._lock.notify_all()

    def _run(self, task: Task) -> tuple:
        fn = self.functions.get(task.function)
        _local.task = task
        try:
            if fn is None:
                raise Problem(title="Unknown Function", detail="this worker has no function %r" % task.function)
            output = fn(task.input)
            try:
                return ("ok", task, json.dumps(output, separators=(",", ":")))
            except (TypeError, ValueError) as e:
                raise Problem(title="Output Not JSON", detail="the output of %s is not a JSON value: %s" % (task.function, e)) from e
        except Exception as e:  # any error of the function fails its task; the worker goes on
            if not isinstance(e, Problem):
                log.info("worker %s: %s failed: %r", self.name, task, e)
            return ("fail", task, Problem.from_exception(e))
        finally:
            _local.task = None

    # Ending tasks.

    def _completing(self) -> None:
        done = False
        while not done:
            item = self._ends.get()
            if item is None:
                return
            oks, fails = [], []
            while item is not None:
                (oks if item[0] == "ok" else fails).append(item)
                if len(oks) >= MAX_COMPLETE_BATCH:
                    break
                try:
                    item = self._ends.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    done = True
            if oks:
                self._complete(oks)
            for _, task, problem in fails:
                self._fail(task, problem)
            with self._lock:
                self._unsent -= len(oks) + len(fails)
                self._lock.notify_all()

    def _release(self, task: Task) -> None:
        with self._lock:
            self._held.pop(task.token, None)

    def _complete(self, oks: list) -> None:
        live = [(task, raw) for _, task, raw in oks if not task.lost]
        self.dropped += len(oks) - len(live)
        if live:
            results = ",".join('{"token":%s,"output":%s}' % (json.dumps(task.token), raw) for task, raw in live)
            body = ('{"query":%s,"variables":{"r":[%s]}}' % (json.dumps(_COMPLETE_MANY), results)).encode()
            try:
                data = self._retrying(lambda: self._transport.request_body(body), live[0][0])
            except CairnError as e:
                # Refused as a whole (one bad output): each one alone, so the others are written.
                log.warning("worker %s: completeTasks refused (%s); completing one by one", self.name, e)
                for task, raw in live:
                    self._complete_one(task, raw)
            else:
                if data is not None:
                    for (task, _), item in zip(live, data["completeTasks"]["results"]):
                        if item.get("code"):
                            self._lost(task, item["code"])
                        else:
                            self.completed += 1
        for _, task, _ in oks:
            self._release(task)

    def _complete_one(self, task: Task, raw: str) -> None:
        try:
            self._retrying(lambda: self.client.graphql(_COMPLETE_ONE, {"t": task.token, "o": json.loads(raw)}), task)
            self.completed += 1
        except CairnError as e:
            if e.conflict:
                self._lost(task, e.code)
            else:  # an output cairn refuses (too large...): the task fails instead
                self._fail(task, Problem(title="Output Refused", detail=str(e)))

    def _fail(self, task: Task, problem: Problem) -> None:
        if task.lost:
            self.dropped += 1
        else:
            try:
                self._retrying(lambda: self.client.graphql(
                    _FAIL, {"t": task.token, "e": problem.to_input(), "r": problem.retryable}), task)
                self.failed += 1
            except CairnError as e:
                if e.conflict:
                    self._lost(task, e.code)
                else:
                    log.error("worker %s: failTask for %s refused: %s", self.name, task, e)
        self._release(task)

    def _lost(self, task: Task, code: str) -> None:
        self.dropped += 1
        log.warning("worker %s: %s not written (%s): its lease was lost", self.name, task, code)

    def _retrying(self, send: Callable[[], Any], task: Task) -> Any:
        """send, again after a connection failure (cairn restarting...), for as long as the
        task's lease may hold; its fenced token makes a repeat harmless."""
        give_up = time.monotonic() + self.lease_ms / 1000.0
        delay = 0.2
        while True:
            try:
                return send()
            except ConnectionFailed as e:
                if time.monotonic() + delay > give_up:
                    log.error("worker %s: could not end %s: %s", self.name, task, e)
                    return None
                time.sleep(delay)
                delay = min(delay * 2, 2.0)

    # Heartbeats.

    def _heartbeating(self) -> None:
        while not self._stopped.is_set():
            now = time.monotonic()
            with self._lock:
                due = [t for t in self._held.values() if t._next_beat <= now]
                upcoming = [t._next_beat for t in self._held.values() if t._next_beat > now]
            for t in due:
                t._next_beat = time.monotonic() + self._beat_s
                try:
                    self._transport.request(_HEARTBEAT, {"t": t.token})
                except CairnError as e:
                    if e.conflict:
                        t.lost = True  # another worker may run it now; its result is dropped
                        self._release(t)
                    else:
                        log.warning("worker %s: heartbeat for %s failed: %s", self.name, t, e)
            wake = heapq.nsmallest(1, upcoming)
            pause = min(wake[0] - time.monotonic(), 0.5) if wake else 0.5
            if pause > 0:
                self._stopped.wait(pause)
