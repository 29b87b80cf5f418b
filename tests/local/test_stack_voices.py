"""The local stack says which voice speaks: ``relay_local.stack.tts_voice_summary`` (the ``tts`` progress line of
``make demo`` / ``relay chat --local``) from the TTS app's ``GET /v1/audio/voices``."""

from __future__ import annotations

from typing import Any

from relay_local.stack import tts_voice_summary


def test_the_summary_names_the_default_voice(tts_server: Any) -> None:
    assert tts_voice_summary(tts_server.http_url) == "default voice jf_alpha of 5 voices"


def test_no_summary_when_nothing_answers() -> None:
    assert tts_voice_summary("http://127.0.0.1:9") is None
