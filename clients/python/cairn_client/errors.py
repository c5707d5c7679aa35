"""The exceptions the client raises, and the Problem a worker's function raises to fail its task."""

from __future__ import annotations

from typing import Any, Optional


class CairnError(Exception):
    """An error cairn answered with.

    code is the error's extensions.code (NOT_FOUND, INVALID_INPUT, CONFLICT, FORBIDDEN,
    UNAUTHENTICATED...), field the input field at fault (extensions.field) when there is one;
    errors holds every error of the answer as cairn sent it.
    """

    def __init__(self, message: str, code: Optional[str] = None, field: Optional[str] = None,
                 extensions: Optional[dict] = None, errors: Optional[list] = None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.field = field
        self.extensions = extensions or {}
        self.errors = errors or []

    @classmethod
    def from_errors(cls, errors: list) -> "CairnError":
        first = errors[0] if errors else {}
        ext = first.get("extensions") or {}
        message = first.get("message", "cairn answered with an error")
        code = ext.get("code")
        if code:
            message = "%s: %s" % (code, message)
        return cls(message, code=code, field=ext.get("field"), extensions=ext, errors=errors)

    @property
    def conflict(self) -> bool:
        """True for CONFLICT: for a task, its lease is lost and the worker drops it."""
        return self.code == "CONFLICT"


class ConnectionFailed(CairnError):
    """cairn could not be reached at the client's URL, or what answered there is not cairn's
    GraphQL endpoint. Its message names the URL."""


class Problem(Exception):
    """Raised by a worker's function to fail its task with these RFC 7807 problem details.

    retryable=False (the default) fails the calling step at once (a Serverless Workflow try can
    catch the problem); retryable=True runs the step again under its retry policy. Any other
    exception a function raises fails the task as retryable, titled with the exception's type.
    """

    def __init__(self, title: str = "Task Failed", detail: Optional[str] = None, status: int = 500,
                 type: Optional[str] = None, retryable: bool = False):
        super().__init__(detail or title)
        self.title = title
        self.detail = detail
        self.status = status
        self.type = type
        self.retryable = retryable

    def to_input(self) -> dict:
        """The TaskErrorInput of failTask."""
        out: dict[str, Any] = {"title": self.title, "status": self.status}
        if self.detail is not None:
            out["detail"] = self.detail
        if self.type is not None:
            out["type"] = self.type
        return out

    @classmethod
    def from_exception(cls, exc: BaseException) -> "Problem":
        """The problem for an exception a function raised: a Problem as it is, any other as a
        retryable failure titled with the exception's type, its message as the detail."""
        if isinstance(exc, Problem):
            return exc
        name = type(exc).__qualname__
        module = type(exc).__module__
        if module not in ("builtins", "__main__"):
            name = module + "." + name
        return cls(title=name, detail=str(exc) or repr(exc), status=500, retryable=True)
