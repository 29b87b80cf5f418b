"""``relay chat --audio opus`` against the whole local stack (conftest ``relay_stack``): it asks for Opus, says so,
and writes the decoded speech as a WAV as long as the PCM turn's."""

from __future__ import annotations

import wave
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from relay_cli.cli import main
from relay_core import limits

if TYPE_CHECKING:
    from relay_local.relay_stack import RelayStack

pytestmark = pytest.mark.timeout(900)


def chat(stack: RelayStack, out: Path, *args: str) -> int:
    token = stack.dev_token("chat-opus")
    return main(["chat", "--gateway-url", stack.gateway_url, "--token", token, "--quiet", "--out", str(out), *args])


def frames(path: Path) -> int:
    with wave.open(str(path)) as wav:
        assert (wav.getframerate(), wav.getnchannels(), wav.getsampwidth()) == (limits.SAMPLE_RATE, 1, 2)
        return int(wav.getnframes())


def test_relay_chat_audio_opus_writes_the_decoded_wav(
    relay_stack: RelayStack, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert chat(relay_stack, tmp_path / "pcm.wav", "Short and sweet.") == 0
    assert f"({limits.PCM_FORMAT})" in capsys.readouterr().out
    assert chat(relay_stack, tmp_path / "opus.wav", "--audio", "opus", "Short and sweet.") == 0
    assert f"({limits.OPUS_FORMAT})" in capsys.readouterr().out
    assert frames(tmp_path / "opus.wav") == frames(tmp_path / "pcm.wav") > limits.SAMPLE_RATE // 4
