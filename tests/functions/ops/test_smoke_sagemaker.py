"""The Kokoro session check over the AWS transport: the real SageMaker HTTP/2 SDK (through the voice agent's
transport, as the smoke_kokoro function runs it in AWS) against the local SageMaker front end and the real model."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from relay_functions.ops.errors import SmokeCheckError
from relay_functions.ops.smoke_aws import sagemaker_session
from relay_functions.ops.smoke_kokoro import check_session

pytestmark = pytest.mark.slow


def test_the_session_check_passes_through_the_sagemaker_sdk(sagemaker_env: Any) -> None:
    figures = asyncio.run(check_session(sagemaker_session("kokoro-tts")))
    assert [f.request_id for f in figures] == ["smoke-1", "smoke-2"]
    assert all(f.pcm_frames >= 1 and f.audio_s > 0.5 for f in figures)


def test_an_unknown_endpoint_fails_at_opening_the_session(sagemaker_env: Any) -> None:
    with pytest.raises(SmokeCheckError, match="open a TTS session"):
        asyncio.run(check_session(sagemaker_session("no-such-endpoint")))
