"""cairn_client: start, operate and follow cairn workflows (Client), and serve remote functions
for them (Worker), through cairn's GraphQL API. Standard library only."""

from .client import ENDED, WORKFLOW_FIELDS, Client
from .errors import CairnError, ConnectionFailed, Problem
from .worker import DEFAULT_CONCURRENCY, DEFAULT_POLLERS, Task, Worker, current_task

__all__ = ["Client", "Worker", "Task", "current_task", "CairnError", "ConnectionFailed", "Problem",
           "ENDED", "WORKFLOW_FIELDS", "DEFAULT_CONCURRENCY", "DEFAULT_POLLERS"]
__version__ = "0.1.0"
