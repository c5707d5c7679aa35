"""Client starts workflows, acts on them and follows them through cairn's GraphQL API."""

from __future__ import annotations

import time
from typing import Any, Iterator, Optional

from ._transport import Transport
from .errors import CairnError, ConnectionFailed

#: The fields of a workflow the client reads (the dict start_workflow, get_workflow, wait and the
#: operations return).
WORKFLOW_FIELDS = ("id type definitionVersion externalId businessKey status state stateText retries "
                   "waitingForSignal lastError input variables output created modified started finished")

#: The statuses in which a workflow has ended.
ENDED = frozenset(("FINISHED", "FAILED", "CANCELLED"))

_START_OPTIONS = {
    "external_id": "externalId",
    "business_key": "businessKey",
    "launch_token": "launchToken",
    "variables": "variables",
    "priority": "priority",
    "start_at": "startAt",
    "idempotency_key": "idempotencyKey",
}


class Client:
    """A connection to one cairn endpoint (http://host:port/graphql), with an API token when cairn
    runs with --auth. It is safe to share between threads (each keeps its own connection).

    The first call to a wrong URL raises ConnectionFailed, a wrong token CairnError with code
    UNAUTHENTICATED; an operation cairn refuses raises CairnError with its code and field.
    """

    def __init__(self, url: str, token: Optional[str] = None, timeout: float = 30.0):
        self.url = url
        self._transport = Transport(url, token, timeout)

    def graphql(self, query: str, variables: Optional[dict] = None, timeout: Optional[float] = None) -> dict:
        """Runs any query or mutation and returns its data."""
        return self._transport.request(query, variables, timeout)

    def close(self) -> None:
        """Closes the calling thread's kept-alive connection."""
        self._transport.close()

    # Workflows.

    def start_workflow(self, type: str, input: Any = None, **options: Any) -> dict:
        """Starts a workflow of a registered type with input (a dict) and returns it. Options:
        external_id, business_key, launch_token, variables, priority, start_at (RFC 3339),
        idempotency_key. Starting again with the same external_id or idempotency_key returns the
        workflow already started."""
        spec: dict = {"type": type}
        if input is not None:
            spec["input"] = input
        for name, value in options.items():
            if name not in _START_OPTIONS:
                raise TypeError("start_workflow() got an unexpected option %r" % name)
            if value is not None:
                spec[_START_OPTIONS[name]] = value
        data = self.graphql("mutation($in: StartWorkflowInput!) { startWorkflow(input: $in) { workflow { %s } } }"
                            % WORKFLOW_FIELDS, {"in": spec})
        return data["startWorkflow"]["workflow"]

    def get_workflow(self, id: str) -> Optional[dict]:
        """The workflow with this ID, or None when there is none."""
        data = self.graphql("query($id: ID!) { workflow(id: $id) { %s } }" % WORKFLOW_FIELDS, {"id": id})
        return data["workflow"]

    def wait(self, id: str, timeout: Optional[float] = None) -> dict:
        """Follows the workflow (subscription workflowUpdated over Server-Sent Events) until it has
        ended (FINISHED, FAILED or CANCELLED) and returns it. Raises TimeoutError when it has not
        ended within timeout seconds, CairnError NOT_FOUND when there is no such workflow."""
        deadline = None if timeout is None else time.monotonic() + timeout
        query = "subscription($id: ID!) { workflowUpdated(id: $id) { %s } }" % WORKFLOW_FIELDS
        connected = []
        last = "not yet seen"
        while True:
            try:  # past the deadline, the stream raises TimeoutError (also before it connects)
                for _, data in self._transport.stream(query, {"id": id}, timeout=60.0, deadline=deadline,
                                                      on_open=lambda: connected.append(True)):
                    workflow = data["workflowUpdated"]
                    if workflow["status"] in ENDED:
                        return workflow
                    last = workflow["status"]
            except TimeoutError:
                raise TimeoutError("workflow %s did not end within %gs (last seen %s)" % (id, timeout, last)) from None
            except ConnectionFailed:
                if not connected:
                    raise
                time.sleep(0.2)  # dropped or silent: subscribe again (it starts with the workflow as it is)

    def _operation(self, name: str, input_type: str, spec: dict) -> dict:
        data = self.graphql("mutation($in: %s!) { %s(input: $in) { workflow { %s } } }" % (input_type, name, WORKFLOW_FIELDS),
                            {"in": {k: v for k, v in spec.items() if v is not None}})
        return data[name]["workflow"]

    def signal(self, id: str, name: str, payload: Any = None, idempotency_key: Optional[str] = None) -> dict:
        """Sends the signal name with a payload to the workflow; returns the workflow."""
        return self._operation("signalWorkflow", "SignalWorkflowInput",
                               {"id": id, "name": name, "payload": payload, "idempotencyKey": idempotency_key})

    def retry(self, id: str, state: Optional[str] = None, reason: Optional[str] = None,
              idempotency_key: Optional[str] = None) -> dict:
        """Runs a MANUAL or FAILED workflow again from state (the state that failed by default)."""
        return self._operation("retryWorkflow", "RetryWorkflowInput",
                               {"id": id, "state": state, "reason": reason, "idempotencyKey": idempotency_key})

    def pause(self, id: str, reason: Optional[str] = None, idempotency_key: Optional[str] = None) -> dict:
        """Pauses the workflow: it does not run until resumed."""
        return self._operation("pauseWorkflow", "WorkflowActionInput",
                               {"id": id, "reason": reason, "idempotencyKey": idempotency_key})

    def resume(self, id: str, reason: Optional[str] = None, idempotency_key: Optional[str] = None) -> dict:
        """Resumes a paused workflow."""
        return self._operation("resumeWorkflow", "WorkflowActionInput",
                               {"id": id, "reason": reason, "idempotencyKey": idempotency_key})

    def cancel(self, id: str, reason: Optional[str] = None, idempotency_key: Optional[str] = None) -> dict:
        """Cancels the workflow."""
        return self._operation("cancelWorkflow", "WorkflowActionInput",
                               {"id": id, "reason": reason, "idempotencyKey": idempotency_key})

    def events(self, filter: Optional[dict] = None, after: Optional[str] = None,
               fields: str = "cursor type at status state workflowId") -> Iterator[dict]:
        """Yields the change events of the workflows matching filter (a WorkflowFilter, such as
        {"types": ["demo.order"]}) in commit order: every event after the cursor after, or, without
        it, those from now on. A dropped connection, or an end for a subscriber too slow to keep
        up, is followed by a new subscription from the last event's cursor: nothing is missed or
        repeated. The first connection's failure is raised."""
        if "cursor" not in fields.split():
            fields = "cursor " + fields
        query = "subscription($f: WorkflowFilter, $after: String) { workflowEvents(filter: $f, after: $after) { %s } }" % fields
        cursor = after
        connected = []
        delay = 0.2
        while True:
            try:
                for _, data in self._transport.stream(query, {"f": filter, "after": cursor}, on_open=lambda: connected.append(True)):
                    delay = 0.2
                    event = data["workflowEvents"]
                    cursor = event["cursor"]
                    yield event
            except ConnectionFailed:
                if not connected:
                    raise
            except CairnError as e:
                if e.code != "SLOW_SUBSCRIBER":
                    raise
                cursor = e.extensions.get("cursor") or cursor
            time.sleep(delay)
            delay = min(delay * 2, 5.0)
