"""docs/protocol.md §1 and §2 say what relay_core implements: every error code, its HTTP status, the limits."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from relay_core import limits
from relay_core.tts.http_events import HTTP_STATUS, OPENAI_MODELS, AudioFormat
from relay_core.tts.messages import TtsErrorCode

DOC = Path(__file__).resolve().parents[3] / "docs" / "protocol.md"


def tts_sections() -> str:
    text = DOC.read_text(encoding="utf-8")
    start, end = text.index("## 1. TTS session"), text.index("## 3. Agent events")
    return text[start:end]


def test_sections_one_and_two_exist() -> None:
    assert "## 2. TTS over HTTP" in tts_sections()


def documented_statuses() -> dict[str, int]:
    """code → status as the §2 "Errors:" paragraph states them (groups separated by ';', each led by a status)."""
    doc = tts_sections()
    paragraph = doc[doc.index("Errors: JSON") : doc.index("The messages speak")]
    statuses: dict[str, int] = {}
    for group in paragraph.split(";"):
        status = re.search(r"\b([1-5]\d\d)\b", group)
        assert status is not None, group
        for code in re.findall(r"`([a-z_]+)`", group):
            statuses[code] = int(status.group(1))
    return statuses


WEBSOCKET_ONLY = {
    TtsErrorCode.UNKNOWN_REQUEST,
    TtsErrorCode.DUPLICATE_REQUEST_ID,
    TtsErrorCode.QUEUE_FULL,
    TtsErrorCode.SESSION_CLOSING,
    TtsErrorCode.AT_CAPACITY,
}


@pytest.mark.parametrize("code", list(TtsErrorCode))
def test_every_error_code_is_listed_with_its_http_status(code: TtsErrorCode) -> None:
    assert f"`{code.value}`" in tts_sections()
    if code not in WEBSOCKET_ONLY:
        assert documented_statuses().get(code.value) == HTTP_STATUS[code]


def test_limits_formats_and_models_are_the_code_s() -> None:
    doc = tts_sections()
    for fact in (
        f"{limits.MIN_SPEED}–{limits.MAX_SPEED}",
        f"{limits.MAX_TEXT_CHARS} characters",
        f"≤ {limits.MAX_REQUEST_ID_CHARS}",
        f"{limits.MIN_BITRATE_KBPS}–{limits.MAX_BITRATE_KBPS}",
        f"{limits.MAX_MESSAGE_BYTES // 1024} KiB",
        "rejected",
    ):
        assert fact in doc, fact
    for fmt in AudioFormat:
        assert f"`{fmt.value}`" in doc
    assert "OPENAI_MODELS" in doc and OPENAI_MODELS
