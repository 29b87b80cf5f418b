"""The TTS container's per-request session metrics: names, namespace and their CloudWatch EMF record.

Shared by the container, which writes them (kokoro_server.session_metrics), and the CDK app's dashboard, which
charts them: the one place their names are spelled. Stdlib only, no I/O.
"""

from __future__ import annotations

from typing import Any, Final

NAMESPACE: Final = "KokoroRelay/Tts"
DIMENSION: Final = "EndpointName"
FIRST_AUDIO: Final = "SessionFirstAudio"
"""Milliseconds from a session request's arrival to its first PCM byte (what a listener waits for)."""
REQUEST_DURATION: Final = "SessionRequestDuration"
"""Milliseconds the whole request took to synthesize."""
AUDIO_SECONDS: Final = "SessionAudioSeconds"
"""Seconds of audio the request produced (with the duration: the real-time factor)."""


def emf_record(
    endpoint: str, *, first_audio_s: float | None, elapsed_s: float, audio_s: float, now_ms: int
) -> dict[str, Any]:
    """One EMF object for a finished request of ``endpoint`` (``first_audio_s`` is None when it made no sound)."""
    values: dict[str, float] = {REQUEST_DURATION: round(elapsed_s * 1000, 1), AUDIO_SECONDS: round(audio_s, 3)}
    if first_audio_s is not None:
        values[FIRST_AUDIO] = round(first_audio_s * 1000, 1)
    units = {FIRST_AUDIO: "Milliseconds", REQUEST_DURATION: "Milliseconds", AUDIO_SECONDS: "Seconds"}
    return {
        "_aws": {
            "Timestamp": now_ms,
            "CloudWatchMetrics": [
                {
                    "Namespace": NAMESPACE,
                    "Dimensions": [[DIMENSION]],
                    "Metrics": [{"Name": name, "Unit": units[name]} for name in values],
                }
            ],
        },
        DIMENSION: endpoint,
        **values,
    }
