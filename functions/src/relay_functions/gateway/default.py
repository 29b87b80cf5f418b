"""``$default``: a message whose ``action`` matched no route. It answers ``error unknown_action`` naming the valid
actions (or ``invalid_json`` for a frame that is not JSON). A message with a valid action that reaches it
anyway (a route missing from a deployment) is served as that route would serve it.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from relay_core.client_messages import ClientMessage
from relay_functions.gateway import cancel, resume, send_message
from relay_functions.gateway.deps import process_deps
from relay_functions.gateway.observability import log_invocation, metrics, tracer
from relay_functions.gateway.route_event import Route, handle_client_message

ROUTES: dict[type[ClientMessage], Route] = {**send_message.ROUTES, **cancel.ROUTES, **resume.ROUTES}


@log_invocation
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return handle_client_message(event, process_deps(), ROUTES)
