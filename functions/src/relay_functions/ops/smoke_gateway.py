"""The gateway check of the smoke test, and the Lambda task ``relay_functions.ops.smoke_gateway.handler``.

Over a real WebSocket to the API: a connection without a token must be refused; a connection with a test user's
token sends one ``sendMessage`` and receives the whole turn through :class:`relay_core.client.session.ClientSession`
(dedupe, gap detection and ``resume``, PCM reassembly): it must complete with text and plausible speech.

The token: ``SMOKE_USER_SECRET_ARN`` names a Secrets Manager secret holding ``{"username", "password"}`` of a test
user of the Cognito pool (signed in with ``USER_PASSWORD_AUTH`` on ``USER_POOL_CLIENT_ID``; its ID token is sent)
or ``{"token"}``. Without that secret the check is reported as skipped, never as passed.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from dataclasses import asdict, dataclass
from typing import Any, Final
from urllib.parse import quote

import boto3
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from relay_core.client.session import (
    AudioReceived,
    ClientSession,
    GapDetected,
    Rejected,
    TextReceived,
    TurnEnded,
    TurnOutcome,
)
from relay_core.errors import RelayError
from relay_functions.ops.errors import SmokeCheckError
from relay_functions.ops.smoke_audio import check_speech

TOKEN_PARAMETER: Final = "token"  # noqa: S105 - the query parameter the $connect authorizer reads
SMOKE_PROMPT: Final = "Say hello to the smoke test."
TURN_TIMEOUT_S: Final = 180.0


@dataclass(frozen=True, slots=True)
class GatewayFigures:
    refused_status: int
    first_text_ms: float
    first_audio_ms: float
    elapsed_ms: float
    audio_s: float
    messages: int

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


async def check_refused_without_token(gateway_url: str) -> int:
    """The HTTP status the gateway refuses a token-less connection with; :class:`SmokeCheckError` if it accepts."""
    try:
        websocket = await connect(gateway_url, open_timeout=15)
    except InvalidStatus as exc:
        return int(exc.response.status_code)
    await websocket.close()
    raise SmokeCheckError("gateway: a connection without a token was accepted")


async def check_turn(gateway_url: str, token: str, prompt: str = SMOKE_PROMPT) -> GatewayFigures:
    refused = await check_refused_without_token(gateway_url)
    session = ClientSession(collect_audio=True)
    started = time.perf_counter()
    first_text = first_audio = None
    messages = 0
    try:
        async with connect(
            f"{gateway_url}?{TOKEN_PARAMETER}={quote(token, safe='')}", max_size=None, open_timeout=15
        ) as ws:
            frame = session.send_message(prompt)
            turn_id = json.loads(frame)["turn_id"]
            await ws.send(frame)
            async with asyncio.timeout(TURN_TIMEOUT_S):
                while True:
                    data = await ws.recv()
                    messages += 1
                    for event in session.receive(data):
                        now = time.perf_counter() - started
                        if isinstance(event, TextReceived) and first_text is None:
                            first_text = now
                        elif isinstance(event, AudioReceived) and first_audio is None:
                            first_audio = now
                        elif isinstance(event, GapDetected):
                            await ws.send(session.resume(turn_id))
                        elif isinstance(event, Rejected):
                            raise SmokeCheckError(f"gateway: the turn was refused: {event.code}: {event.message}")
                        elif isinstance(event, TurnEnded):
                            if event.outcome is not TurnOutcome.COMPLETED:
                                raise SmokeCheckError(
                                    f"gateway: the turn ended {event.outcome}: {event.code}: {event.message}"
                                )
                            turn = session.turn(turn_id)
                            if first_text is None or first_audio is None:
                                raise SmokeCheckError("gateway: the turn completed without text or audio")
                            audio = check_speech(turn.pcm, turn.text, what="gateway turn")
                            return GatewayFigures(
                                refused_status=refused,
                                first_text_ms=round(first_text * 1000, 1),
                                first_audio_ms=round(first_audio * 1000, 1),
                                elapsed_ms=round((time.perf_counter() - started) * 1000, 1),
                                audio_s=audio.duration_s,
                                messages=messages,
                            )
    except InvalidStatus as exc:
        raise SmokeCheckError(
            f"gateway: the test user's connection was refused (HTTP {exc.response.status_code})"
        ) from exc
    except TimeoutError as exc:
        raise SmokeCheckError(
            f"gateway: the turn did not end within {TURN_TIMEOUT_S:.0f} s ({messages} messages)"
        ) from exc
    except ConnectionClosed as exc:
        raise SmokeCheckError(f"gateway: the connection closed mid-turn ({exc})") from exc
    except RelayError as exc:
        raise SmokeCheckError(f"gateway: a message broke the client protocol: {exc.message}") from exc


def token_from_environment() -> str | None:
    """The test user's token: ``SMOKE_USER_TOKEN`` (local stack and tests only: a dev token), else the secret named
    by ``SMOKE_USER_SECRET_ARN``; None when neither is configured."""
    if os.environ.get("SMOKE_USER_TOKEN"):
        return os.environ["SMOKE_USER_TOKEN"]
    secret_arn = os.environ.get("SMOKE_USER_SECRET_ARN")
    if not secret_arn:
        return None
    secret = json.loads(boto3.client("secretsmanager").get_secret_value(SecretId=secret_arn)["SecretString"])
    if "token" in secret:
        return str(secret["token"])
    answer = boto3.client("cognito-idp").initiate_auth(
        AuthFlow="USER_PASSWORD_AUTH",
        ClientId=os.environ["USER_POOL_CLIENT_ID"],
        AuthParameters={"USERNAME": secret["username"], "PASSWORD": secret["password"]},
    )
    return str(answer["AuthenticationResult"]["IdToken"])


def handler(event: dict[str, Any], context: object) -> dict[str, Any]:
    """Runs the gateway check against ``GATEWAY_URL`` (wss://...)."""
    url = os.environ.get("GATEWAY_URL", "")
    if not url:
        raise SmokeCheckError("GATEWAY_URL is not set: the function does not know which API to check")
    token = token_from_environment()
    if token is None:
        refused = asyncio.run(check_refused_without_token(url))
        return {"check": "gateway", "skipped": "no test user (set SMOKE_USER_SECRET_ARN)", "refused_status": refused}
    return {"check": "gateway", **asyncio.run(check_turn(url, token)).to_json()}


__all__ = ["GatewayFigures", "check_refused_without_token", "check_turn", "handler", "token_from_environment"]
