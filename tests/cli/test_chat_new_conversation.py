"""``relay chat --new-conversation`` against the whole local stack (conftest ``relay_stack``: the real gateway
functions, moto, the agent with the speak model over the local Bedrock runtime, the Kokoro TTS): a prompt sent with
the flag reaches the model with none of the user's earlier turns; without it, the model sees them."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from relay_cli.cli import main
from relay_cli.gateway_client import run_turn
from relay_core.client.session import TurnOutcome

if TYPE_CHECKING:
    from relay_local.relay_stack import RelayStack

pytestmark = pytest.mark.timeout(900)


def model_saw(stack: RelayStack) -> list[tuple[str, str]]:
    """The messages (role, text) of the model request the agent made last."""
    request = stack.bedrock.last_request
    assert request is not None, "the agent never called the model"
    return [(message.role, message.text) for message in request.messages]


def chat(stack: RelayStack, user: str, out: Path, *args: str) -> int:
    token = stack.dev_token(user)
    return main(["chat", "--gateway-url", stack.gateway_url, "--token", token, "--quiet", "--out", str(out), *args])


def test_new_conversation_sends_the_model_no_earlier_turn(
    relay_stack: RelayStack, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    user = f"chat-starts-over-{uuid.uuid4().hex[:8]}"
    report = asyncio.run(run_turn(relay_stack.gateway_url, relay_stack.dev_token(user), "Apples are red."))
    assert report.outcome is TurnOutcome.COMPLETED, report
    assert chat(relay_stack, user, tmp_path / "b.wav", "Bananas are yellow.") == 0
    assert [text for role, text in model_saw(relay_stack) if role == "user"] == [
        "Apples are red.",
        "Bananas are yellow.",
    ], "without the flag the conversation goes on"

    assert chat(relay_stack, user, tmp_path / "c.wav", "--new-conversation", "Cherries are dark.") == 0
    assert model_saw(relay_stack) == [("user", "Cherries are dark.")]
    assert chat(relay_stack, user, tmp_path / "d.wav", "Dates are sweet.") == 0
    assert [text for role, text in model_saw(relay_stack) if role == "user"] == [
        "Cherries are dark.",
        "Dates are sweet.",
    ], "the new conversation goes on from there"
    capsys.readouterr()


def test_new_conversation_with_a_token_the_gateway_refuses_fails_before_any_turn(
    relay_stack: RelayStack, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["chat", "--gateway-url", relay_stack.gateway_url, "--token", "not-a-jwt", "--new-conversation", "Hi."])
    assert code == 1
    assert "refused the connection (HTTP 401)" in capsys.readouterr().err
