"""The ``$connect`` Lambda authorizer (REQUEST type, identity source ``route.request.querystring.token``).

Browsers cannot set headers on a WebSocket, so the client connects with ``?token=<JWT>``. A verified token
(:mod:`relay_functions.gateway.tokens`) gets an IAM policy allowing ``execute-api:Invoke`` on the event's
``methodArn``, with ``principalId`` and context ``user_id`` = the token's ``sub`` (``$connect`` reads it from
``requestContext.authorizer``). A missing, malformed, expired or wrongly signed token raises
``Exception("Unauthorized")`` (API Gateway answers 401); a genuine token for another app client or issuer, or
with the wrong ``token_use``, gets a Deny policy (403). No connection is made either way.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aws_lambda_powertools.utilities.data_classes.api_gateway_authorizer_event import APIGatewayAuthorizerRequestEvent
from aws_lambda_powertools.utilities.typing import LambdaContext

from relay_functions.gateway.deps import process_deps
from relay_functions.gateway.lambda_handler import gateway_handler
from relay_functions.gateway.observability import count, logger
from relay_functions.gateway.tokens import TokenRejectedError, TokenVerifier

TOKEN_PARAMETER = "token"  # noqa: S105 - a parameter name, not a secret
"""The query string parameter that carries the JWT."""
UNAUTHORIZED = "Unauthorized"
"""The exact exception message API Gateway turns into a 401."""


class UnauthorizedError(Exception):
    """Raised to make API Gateway answer 401 (its message must be exactly ``Unauthorized``)."""

    def __init__(self) -> None:
        super().__init__(UNAUTHORIZED)


def policy(principal_id: str, effect: str, method_arn: str, context: Mapping[str, str] | None = None) -> dict[str, Any]:
    """An authorizer result: ``effect`` (Allow or Deny) on ``execute-api:Invoke`` for ``method_arn``."""
    result: dict[str, Any] = {
        "principalId": principal_id,
        "policyDocument": {
            "Version": "2012-10-17",
            "Statement": [{"Action": "execute-api:Invoke", "Effect": effect, "Resource": method_arn}],
        },
    }
    if context:
        result["context"] = dict(context)
    return result


def authorize(raw_event: Mapping[str, Any], verifier: TokenVerifier) -> dict[str, Any]:
    """The policy for a REQUEST authorizer event; raises :class:`UnauthorizedError` for a 401."""
    event = APIGatewayAuthorizerRequestEvent(dict(raw_event))
    token = (event.query_string_parameters or {}).get(TOKEN_PARAMETER)
    try:
        identity = verifier.verify(token)
    except TokenRejectedError as exc:
        count("ConnectionsRefused")
        logger.info("connection refused", extra={"status": exc.status, "reason": exc.reason})
        if exc.status == 403:
            return policy("forbidden", "Deny", event.method_arn)
        raise UnauthorizedError from exc
    count("ConnectionsAuthorized")
    return policy(
        identity.user_id,
        "Allow",
        event.method_arn,
        {"user_id": identity.user_id, "token_use": identity.token_use, "client_id": identity.client_id},
    )


@gateway_handler(__name__)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return authorize(event, process_deps().token_verifier)
