"""``relay speak`` against the real TTS container (the session's tts_server): text, timing line, a valid WAV."""

from __future__ import annotations

import struct
import wave
from pathlib import Path
from typing import Any

import pytest

from relay_cli.cli import main

pytestmark = pytest.mark.slow


def test_relay_speak_streams_text_and_writes_the_wav(
    tts_server: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "nested" / "speech.wav"
    code = main(["speak", "Hello from the relay. Goodbye.", "--tts-url", tts_server.ws_url, "--out", str(out),
                 "--rate", "500"])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "Hello from the relay. Goodbye." in captured.out
    assert "time to first audio:" in captured.out
    assert "speak" in captured.err and "no LLM" in captured.err
    with wave.open(str(out), "rb") as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (24_000, 1, 2)
        frames = wav.readframes(wav.getnframes())
    assert wav.getnframes() > 24_000 // 2  # more than half a second of speech
    samples = struct.unpack(f"<{len(frames) // 2}h", frames)
    assert max(abs(s) for s in samples) > 1000  # not silence


def test_relay_speak_reports_an_unreachable_tts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "speech.wav"
    code = main(["speak", "Anyone there?", "--tts-url", "ws://127.0.0.1:9/invocations-bidirectional-stream",
                 "--out", str(out), "--rate", "500"])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 1
    assert "Anyone there?" in captured.out
    assert "tts_unavailable" in captured.err
    assert not out.exists()  # a failed turn writes nothing
    assert "wrote" not in captured.out and "Traceback" not in captured.err


@pytest.mark.parametrize(
    ("flags", "code", "says"),
    [
        (["--agent-url", "http://127.0.0.1:9"], 1, "cannot reach the agent at http://127.0.0.1:9"),
        (["--agent-url", "ws://127.0.0.1:9"], 2, "argument --agent-url: 'ws://127.0.0.1:9' must start with http://"),
        (["--tts-url", "http://127.0.0.1:9/x"], 2, "ws:// or wss://"),
        (["--tts-url", "ws://127.0.0.1:9"], 2, "ws://127.0.0.1:9/invocations-bidirectional-stream"),
    ],
)
def test_relay_speak_mistakes_get_one_line_and_no_file(
    flags: list[str], code: int, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "speech.wav"
    assert main(["speak", "Hi.", "--out", str(out), *flags]) == code
    err = capsys.readouterr().err
    assert says in err
    assert "Traceback" not in err and "starting" not in err
    assert not out.exists()


def test_relay_speak_names_a_404(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from starlette.applications import Starlette  # noqa: PLC0415

    from relay_local.servers import BackgroundServer  # noqa: PLC0415

    with BackgroundServer(Starlette(), name="not-an-agent") as server:
        code = main(["speak", "Hi.", "--out", str(tmp_path / "s.wav"), "--agent-url", server.http_url])
    err = capsys.readouterr().err
    assert code == 1
    assert "answered HTTP 404" in err and "Traceback" not in err


@pytest.mark.parametrize("command", ["speak", "chat", "up"])
def test_every_local_command_takes_the_same_agent_options(command: str) -> None:
    """``relay speak`` chooses its model and TTS transport as ``relay chat --local`` and ``relay up`` do."""
    from relay_cli.agent_options import agent_config_from  # noqa: PLC0415
    from relay_cli.cli import build_parser  # noqa: PLC0415
    from relay_local.bedrock.models import SMOLLM2_MODEL_ID  # noqa: PLC0415
    from voice_agent.config import ModelKind  # noqa: PLC0415

    extra = {"speak": ["Hi"], "chat": ["--local", "Hi"], "up": []}[command]
    args = build_parser().parse_args([command, *extra, "--model", "smollm2", "--tts-transport", "sagemaker"])
    config = agent_config_from(args)
    assert (config.model, config.model_id, args.tts_transport) == (ModelKind.BEDROCK, SMOLLM2_MODEL_ID, "sagemaker")
