"""The local Bedrock runtime through the real boto3 ``bedrock-runtime`` client (SigV4-signed, endpoint from
``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``) and the real ``openai`` SDK, on the echo model."""

from __future__ import annotations

import time
from typing import Any

import boto3
import httpx
import openai
import pytest
from botocore.exceptions import ClientError, EventStreamError

from relay_local.bedrock import ECHO_MODEL_ID
from relay_local.bedrock.runtime import THROTTLING_MESSAGE

TEXT = "Hello there. How are you today? I am fine."
USER = [{"role": "user", "content": [{"text": TEXT}]}]
FAST = {"tokens_per_s": 500}


def _client() -> Any:
    return boto3.client("bedrock-runtime")


def test_converse_stream_answers_bedrocks_event_sequence(bedrock_env: Any) -> None:
    response = _client().converse_stream(
        modelId=ECHO_MODEL_ID,
        messages=USER,
        system=[{"text": "Be brief."}],
        additionalModelRequestFields=FAST,
    )
    events = list(response["stream"])
    kinds = [next(iter(e)) for e in events]
    assert kinds[0] == "messageStart" and kinds[-3:] == ["contentBlockStop", "messageStop", "metadata"]
    assert set(kinds[1:-3]) == {"contentBlockDelta"}
    assert "".join(e["contentBlockDelta"]["delta"]["text"] for e in events[1:-3]) == TEXT
    assert events[-2] == {"messageStop": {"stopReason": "end_turn"}}
    usage = events[-1]["metadata"]["usage"]
    assert usage["outputTokens"] == len(kinds) - 4 == 12
    assert usage["totalTokens"] == usage["inputTokens"] + 12
    assert events[-1]["metadata"]["metrics"]["latencyMs"] >= 0
    assert bedrock_env.runtime.last_request.system == "Be brief."


def test_converse_answers_the_whole_reply(bedrock_env: Any) -> None:
    answer = _client().converse(modelId=ECHO_MODEL_ID, messages=USER, additionalModelRequestFields=FAST)
    assert answer["output"]["message"] == {"role": "assistant", "content": [{"text": TEXT}]}
    assert answer["stopReason"] == "end_turn" and answer["usage"]["outputTokens"] == 12


def test_max_tokens_and_stop_sequences_end_the_reply_with_their_stop_reason(bedrock_env: Any) -> None:
    client = _client()
    capped = client.converse(
        modelId=ECHO_MODEL_ID, messages=USER, inferenceConfig={"maxTokens": 3}, additionalModelRequestFields=FAST
    )
    assert capped["output"]["message"]["content"][0]["text"] == "Hello there."
    assert capped["stopReason"] == "max_tokens"
    stopped = client.converse(
        modelId=ECHO_MODEL_ID,
        messages=USER,
        inferenceConfig={"stopSequences": ["How"], "temperature": 0.2},
        additionalModelRequestFields=FAST,
    )
    assert stopped["output"]["message"]["content"][0]["text"] == "Hello there. "
    assert stopped["stopReason"] == "stop_sequence"


def test_a_bad_model_id_or_request_is_a_validation_exception(bedrock_env: Any) -> None:
    client = _client()
    with pytest.raises(client.exceptions.ValidationException, match=r"local\.echo"):
        client.converse_stream(modelId="anthropic.claude-v9", messages=USER)
    with pytest.raises(client.exceptions.ValidationException, match="alternate"):
        client.converse(modelId=ECHO_MODEL_ID, messages=USER + USER)


def test_an_unsigned_request_is_refused(bedrock_env: Any) -> None:
    url = f"{bedrock_env.endpoint_url}/model/{ECHO_MODEL_ID}/converse"
    answer = httpx.post(url, json={"messages": USER})
    assert answer.status_code == 403 and answer.headers["x-amzn-errortype"].startswith("AccessDeniedException")


def test_injected_throttling_is_a_throttling_exception(bedrock_env: Any) -> None:
    bedrock_env.runtime.faults.throttle(1)
    client = _client()
    with pytest.raises(client.exceptions.ThrottlingException, match=THROTTLING_MESSAGE):
        client.converse_stream(modelId=ECHO_MODEL_ID, messages=USER)
    assert client.converse(modelId=ECHO_MODEL_ID, messages=USER, additionalModelRequestFields=FAST)["stopReason"]


def test_an_injected_mid_stream_error_arrives_after_the_first_deltas(bedrock_env: Any) -> None:
    bedrock_env.runtime.faults.break_stream(after_tokens=2)
    stream = _client().converse_stream(modelId=ECHO_MODEL_ID, messages=USER, additionalModelRequestFields=FAST)
    seen: list[dict[str, Any]] = []

    def read_all() -> None:
        seen.extend(stream["stream"])

    with pytest.raises(EventStreamError) as caught:
        read_all()
    assert caught.value.response["Error"]["Code"] == "modelStreamErrorException"
    assert [next(iter(e)) for e in seen] == ["messageStart", "contentBlockDelta", "contentBlockDelta"]


def test_closing_the_stream_stops_generation_at_once(bedrock_env: Any) -> None:
    """A barge-in: the client closes the stream after two deltas of a 3 tokens/s reply (12 tokens); the model's
    thread ends within two seconds (the echo model would otherwise run for over 3 s more; the bound leaves room for
    a loaded test machine)."""
    runtime = bedrock_env.runtime
    stream = _client().converse_stream(
        modelId=ECHO_MODEL_ID, messages=USER, additionalModelRequestFields={"tokens_per_s": 3}
    )["stream"]
    for count, _ in enumerate(stream):
        if count == 2:
            break
    assert runtime.active == 1
    closed = time.monotonic()
    stream.close()
    while runtime.active and time.monotonic() - closed < 2.0:
        time.sleep(0.02)
    assert runtime.active == 0, "the generation still runs two seconds after the client closed its stream"


def test_a_client_error_carries_bedrocks_error_code(bedrock_env: Any) -> None:
    try:
        video = {"video": {"format": "mp4", "source": {"bytes": b"x"}}}
        _client().converse(modelId=ECHO_MODEL_ID, messages=[{"role": "user", "content": [video]}])
    except ClientError as exc:
        assert exc.response["Error"]["Code"] == "ValidationException"
        assert exc.response["ResponseMetadata"]["HTTPStatusCode"] == 400
    else:
        pytest.fail("a video block was accepted")


def test_the_openai_compatible_route_streams_the_same_model(bedrock_env: Any) -> None:
    client = openai.OpenAI(base_url=bedrock_env.openai_base_url, api_key="unused")
    assert ECHO_MODEL_ID in [m.id for m in client.models.list()]
    chunks = list(
        client.chat.completions.create(
            model=ECHO_MODEL_ID,
            messages=[{"role": "system", "content": "Be brief."}, {"role": "user", "content": TEXT}],
            stream=True,
            stream_options={"include_usage": True},
            max_tokens=6,
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Hello there. How are you"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "length"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 6
    with pytest.raises(openai.NotFoundError):
        client.chat.completions.create(model="gpt-9", messages=[{"role": "user", "content": "x"}])


def test_python_m_relay_local_bedrock_serves_until_ctrl_c(monkeypatch: pytest.MonkeyPatch) -> None:
    """The stand-in on its own (for ``voice-agent`` started by hand): it prints the variable to set, answers the
    real client there, and stops on SIGINT, however often it arrives, with status 0."""
    import re  # noqa: PLC0415
    import signal  # noqa: PLC0415
    import socket  # noqa: PLC0415
    import subprocess  # noqa: PLC0415
    import sys  # noqa: PLC0415

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen(
        [sys.executable, "-m", "relay_local.bedrock", "--port", str(port)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        match = re.search(r"AWS_ENDPOINT_URL_BEDROCK_RUNTIME=(\S+)", line)
        assert match is not None, line
        monkeypatch.setenv("AWS_ENDPOINT_URL_BEDROCK_RUNTIME", match.group(1))
        for name, value in (
            ("AWS_ACCESS_KEY_ID", "x"),
            ("AWS_SECRET_ACCESS_KEY", "x"),
            ("AWS_DEFAULT_REGION", "us-east-1"),
        ):
            monkeypatch.setenv(name, value)
        answer = _client().converse(modelId=ECHO_MODEL_ID, messages=USER, additionalModelRequestFields=FAST)
        assert answer["output"]["message"]["content"][0]["text"] == TEXT
        server.send_signal(signal.SIGINT)
        server.send_signal(signal.SIGINT)  # a terminal's Ctrl-C reaches the group, and users press twice
        assert server.wait(timeout=60) == 0  # about a second, even beside two CPU hogs: 60 s only catches a hang
    finally:
        server.kill()
        server.wait()
