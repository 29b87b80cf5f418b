"""The local Lambda Invoke endpoint: the HTTP path of boto3's ``lambda.invoke``, so ``sendMessage``'s real boto3
call (``InvocationType="Event"``) starts the relay function as it would in AWS.

``POST /2015-03-31/functions/{FunctionName}/invocations``:
- ``X-Amz-Invocation-Type: Event`` → 202 at once; the handler runs in a background thread of its own (a relay
  turn may last minutes). Unlike AWS, a failed asynchronous invocation is logged, not retried.
- ``RequestResponse`` (the default) → runs the handler and answers 200 with its JSON result; a raised error
  answers 200 with ``X-Amz-Function-Error: Unhandled`` and ``{errorMessage, errorType}``, as Lambda does.
- ``DryRun`` → 204. An unknown function → 404 ``ResourceNotFoundException``; a body that is not JSON → 400
  ``InvalidRequestContentException``.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
import weakref
from collections.abc import Iterator, Mapping
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from relay_local.aws.errors import aws_error
from relay_local.gateway.lambda_context import LambdaContext
from relay_local.gateway.websocket_api import Handler

logger = logging.getLogger(__name__)

INVOKE_PATH = "/2015-03-31/functions/{function_name}/invocations"


def function_name_of(identifier: str) -> str:
    """The function name in a name, a full ARN or a partial ARN (``…:function:NAME[:QUALIFIER]``)."""
    parts = identifier.split(":")
    if "function" in parts:
        return parts[parts.index("function") + 1]
    return parts[0]


class AbandonedInvocationsFilter(logging.Filter):
    """Drops every log record emitted by a thread of an abandoned invocation (whatever the logger: the functions'
    JSON logger, botocore, urllib3); records from every other thread pass. Threads are held weakly."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: weakref.WeakSet[threading.Thread] = weakref.WeakSet()

    def filter(self, record: logging.LogRecord) -> bool:
        return threading.current_thread() not in self.threads


ABANDONED_QUIET = AbandonedInvocationsFilter()
"""The one filter every stopping stack adds its lingering invocations to."""


def _every_handler() -> Iterator[logging.Handler]:
    loggers = [
        logging.getLogger(),
        *(v for v in logging.Logger.manager.loggerDict.values() if isinstance(v, logging.Logger)),
    ]
    for each in loggers:
        yield from each.handlers
    if logging.lastResort is not None:  # what a logger with no handler anywhere writes through
        yield logging.lastResort


class LambdaInvokeService:
    """Function name → in-process handler, and the background invocations in flight."""

    def __init__(self, functions: Mapping[str, Handler]) -> None:
        self.functions = dict(functions)
        self._lock = threading.Lock()
        self._running: set[threading.Thread] = set()
        self.completed = 0
        self.failed = 0
        self._abandoned = threading.Event()

    @property
    def in_flight(self) -> int:
        with self._lock:
            return len(self._running)

    def wait_idle(self, timeout_s: float) -> bool:
        """Block until no asynchronous invocation is running (True), or ``timeout_s`` passed (False)."""
        deadline = time.monotonic() + timeout_s
        while True:
            with self._lock:
                threads = list(self._running)
            if not threads:
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            threads[0].join(remaining)

    def abandon(self) -> None:
        """The stack is stopping: invocations still running (e.g. a relay lingering for a ``resume``) are left to
        fail against the stopped endpoints, quietly, as a Lambda environment torn down under them would: from now
        on nothing they log reaches any handler (a relay polling a stopped DynamoDB would warn after the command's
        report), and their errors are logged at DEBUG only."""
        self._abandoned.set()
        with self._lock:
            ABANDONED_QUIET.threads.update(self._running)
        for handler in _every_handler():
            if ABANDONED_QUIET not in handler.filters:
                handler.addFilter(ABANDONED_QUIET)

    def _run(self, name: str, handler: Handler, event: Any) -> Any:
        return handler(event, LambdaContext(function_name=name))

    def _run_in_background(self, name: str, handler: Handler, event: Any) -> None:
        try:
            self._run(name, handler, event)
        except Exception:
            if self._abandoned.is_set():  # the stack stopped under it: its endpoints are gone, as intended
                logger.debug("abandoned invocation of %s ended with an error", name, exc_info=True)
            else:
                logger.exception("asynchronous invocation of %s failed", name)
            self.failed += 1
        else:
            self.completed += 1
        finally:
            with self._lock:
                self._running.discard(threading.current_thread())

    def start_async(self, name: str, event: Any) -> None:
        """Run the function in a background thread of its own (``InvocationType=Event``)."""
        thread = threading.Thread(
            target=self._run_in_background, args=(name, self.functions[name], event), name=f"lambda-{name}", daemon=True
        )
        with self._lock:
            self._running.add(thread)
        thread.start()

    def routes(self) -> list[Route]:
        async def invoke(request: Request) -> Response:
            name = function_name_of(request.path_params["function_name"])
            handler = self.functions.get(name)
            if handler is None:
                return aws_error(404, "ResourceNotFoundException", f"Function not found: {name}")
            raw = await request.body()
            try:
                event = json.loads(raw) if raw else {}
            except ValueError:
                return aws_error(400, "InvalidRequestContentException", "Could not parse request body into json")
            kind = request.headers.get("x-amz-invocation-type", "RequestResponse")
            if kind == "DryRun":
                return Response(status_code=204)
            if kind == "Event":
                self.start_async(name, event)
                return Response(status_code=202)
            try:
                result = await asyncio.to_thread(self._run, name, handler, event)
            except Exception as exc:  # noqa: BLE001 - reported to the caller as Lambda reports a function error
                body = {"errorMessage": str(exc), "errorType": type(exc).__name__}
                return JSONResponse(body, headers={"X-Amz-Function-Error": "Unhandled"})
            return JSONResponse(result, headers={"X-Amz-Executed-Version": "$LATEST"})

        return [Route(INVOKE_PATH, invoke, methods=["POST"])]


__all__ = ["INVOKE_PATH", "LambdaInvokeService", "function_name_of"]
