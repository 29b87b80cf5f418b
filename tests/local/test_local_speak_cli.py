"""``relay speak`` against the real TTS container (the session's tts_server): text, timing line, a valid WAV."""

from __future__ import annotations

import struct
import wave
from pathlib import Path
from typing import Any

import pytest

from relay_local.cli import main

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
