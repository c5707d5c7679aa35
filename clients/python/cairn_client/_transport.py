"""HTTP to cairn's GraphQL endpoint: kept-alive connections (one per thread) for requests, and
a connection of its own for each Server-Sent Events stream."""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
import time
import urllib.parse
from typing import Any, Iterator, Optional

from .errors import CairnError, ConnectionFailed

# Errors of a kept-alive connection the server closed while it sat idle: the request is sent
# again once on a fresh connection.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, http.client.CannotSendRequest)


class Transport:
    """Posts GraphQL requests to one endpoint with an optional bearer token."""

    def __init__(self, url: str, token: Optional[str] = None, timeout: float = 30.0):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConnectionFailed("not an http(s) URL: %r (cairn's endpoint is http://host:port/graphql)" % url)
        self.url = url
        self.timeout = timeout
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        self._path = (parts.path or "/") + ("?" + parts.query if parts.query else "")
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if token:
            self._headers["Authorization"] = "Bearer " + token
        self._local = threading.local()

    def _connect(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout,
                                               context=ssl.create_default_context())
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def request(self, query: str, variables: Optional[dict] = None, timeout: Optional[float] = None,
                on_connection=None) -> dict:
        """Sends one operation and returns its data; raises CairnError for an error in the answer
        and ConnectionFailed when the endpoint cannot be reached or is not cairn's. on_connection,
        when given, is called with the connection, connected, before the request goes out (so
        that another thread can abort a long poll by shutting its socket down)."""
        return self.request_body(json.dumps({"query": query, "variables": variables or {}}, separators=(",", ":")).encode(),
                                 timeout, on_connection)

    def request_body(self, body: bytes, timeout: Optional[float] = None, on_connection=None) -> dict:
        """request with the JSON request already encoded (a worker encodes each output once, in
        the thread that produced it)."""
        timeout = self.timeout if timeout is None else timeout
        for attempt in (0, 1):
            conn = getattr(self._local, "conn", None)
            reused = conn is not None
            if conn is None:
                conn = self._connect(timeout)
                self._local.conn = conn
            if on_connection is not None:
                if conn.sock is None:
                    # Connected first: a connection handed over without its socket cannot be
                    # shut down by the other thread, and the poll would run its whole wait.
                    try:
                        conn.connect()
                    except OSError as e:
                        self._drop()
                        raise ConnectionFailed("cannot reach cairn at %s: %s" % (self.url, e)) from e
                on_connection(conn)
            try:
                if conn.sock is not None:
                    conn.sock.settimeout(timeout)
                else:
                    conn.timeout = timeout
                conn.request("POST", self._path, body, self._headers)
                resp = conn.getresponse()
                raw = resp.read()
            except _STALE as e:
                self._drop()
                if reused and attempt == 0:
                    continue
                raise ConnectionFailed("cannot reach cairn at %s: %s" % (self.url, e)) from e
            except (OSError, http.client.HTTPException) as e:
                self._drop()
                raise ConnectionFailed("cannot reach cairn at %s: %s" % (self.url, e)) from e
            if resp.getheader("Connection", "").lower() == "close":
                self._drop()
            return self._decode(resp.status, resp.getheader("Content-Type", ""), raw)
        raise AssertionError("unreachable")

    def _drop(self) -> None:
        conn = getattr(self._local, "conn", None)
        self._local.conn = None
        if conn is not None:
            conn.close()

    def close(self) -> None:
        """Closes this thread's kept-alive connection."""
        self._drop()

    def _decode(self, status: int, content_type: str, raw: bytes) -> dict:
        answer: Any = None
        if "json" in content_type:
            try:
                answer = json.loads(raw)
            except ValueError:
                answer = None
        if not isinstance(answer, dict) or ("data" not in answer and "errors" not in answer):
            raise ConnectionFailed("%s is not cairn's GraphQL endpoint: it answered HTTP %d (%s)"
                                   % (self.url, status, content_type or "no content type"))
        if answer.get("errors"):
            raise CairnError.from_errors(answer["errors"])
        return answer.get("data") or {}

    def stream(self, query: str, variables: Optional[dict] = None, last_event_id: Optional[str] = None,
               timeout: float = 60.0, on_open=None, deadline: Optional[float] = None) -> Iterator[tuple]:
        """Subscribes over Server-Sent Events and yields (id, payload) for each event until the
        stream completes; the connection is closed when the iterator is. A GraphQL error in an
        event is raised as CairnError; a lost connection or silence longer than timeout (cairn
        pings every 20 s by default) as ConnectionFailed. With deadline (a time.monotonic()
        instant), TimeoutError once it passes, however often events and pings arrive."""
        def wait_s() -> float:
            if deadline is None:
                return timeout
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("the stream from %s reached its deadline" % self.url)
            return min(timeout, left)
        body = json.dumps({"query": query, "variables": variables or {}}, separators=(",", ":")).encode()
        headers = dict(self._headers, Accept="text/event-stream")
        if last_event_id:
            headers["Last-Event-ID"] = last_event_id
        conn = self._connect(wait_s())
        try:
            try:
                conn.request("POST", self._path, body, headers)
                resp = conn.getresponse()
            except (OSError, http.client.HTTPException) as e:
                wait_s()  # past the deadline: TimeoutError, not a connection failure
                raise ConnectionFailed("cannot reach cairn at %s: %s" % (self.url, e)) from e
            if "text/event-stream" not in resp.getheader("Content-Type", ""):
                self._decode(resp.status, resp.getheader("Content-Type", ""), resp.read())
                raise ConnectionFailed("%s answered HTTP %d without an event stream" % (self.url, resp.status))
            if on_open is not None:
                on_open()
            event, ident, data = "message", None, []
            while True:
                if conn.sock is not None:
                    conn.sock.settimeout(wait_s())
                try:
                    line = resp.readline()
                except (OSError, http.client.HTTPException) as e:
                    if isinstance(e, socket.timeout):
                        wait_s()
                        raise ConnectionFailed("no word from cairn at %s for %gs" % (self.url, timeout)) from e
                    raise ConnectionFailed("lost the stream from %s: %s" % (self.url, e)) from e
                if not line:
                    raise ConnectionFailed("the stream from %s ended early" % self.url)
                line = line.decode("utf-8").rstrip("\r\n")
                if line == "":
                    if event == "complete":
                        return
                    if data:
                        payload = json.loads("\n".join(data))
                        if payload.get("errors"):
                            raise CairnError.from_errors(payload["errors"])
                        yield ident, payload.get("data") or {}
                    event, ident, data = "message", None, []
                elif line.startswith(":"):
                    continue
                else:
                    name, _, value = line.partition(":")
                    value = value[1:] if value.startswith(" ") else value
                    if name == "event":
                        event = value
                    elif name == "id":
                        ident = value
                    elif name == "data":
                        data.append(value)
        finally:
            conn.close()
