"""The TTS container's session metrics: names, namespace and their CloudWatch EMF records (per finished request,
and the sessions open and queued, sampled every :data:`SESSION_GAUGE_INTERVAL_S`: the autoscaling signal).

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


OPEN_SESSIONS: Final = "SessionsOpen"
"""Sessions holding a slot of the instance (at most its ``KOKORO_MAX_SESSIONS``)."""
QUEUED_SESSIONS: Final = "SessionsQueued"
"""Sessions waiting in the instance's admission queue for a slot: above 0, the instance is short of capacity."""
SESSION_GAUGE_INTERVAL_S: Final = 10.0
"""How often the container samples :data:`OPEN_SESSIONS` and :data:`QUEUED_SESSIONS` (high-resolution metrics, so an
alarm or a scaling policy may use a 10-second period)."""


def sessions_emf_record(endpoint: str, *, open_sessions: int, queued_sessions: int, now_ms: int) -> dict[str, Any]:
    """One EMF object sampling ``endpoint``'s sessions: open (holding a slot) and queued (waiting for one)."""
    values = {OPEN_SESSIONS: open_sessions, QUEUED_SESSIONS: queued_sessions}
    return {
        "_aws": {
            "Timestamp": now_ms,
            "CloudWatchMetrics": [
                {
                    "Namespace": NAMESPACE,
                    "Dimensions": [[DIMENSION]],
                    "Metrics": [{"Name": name, "Unit": "Count", "StorageResolution": 1} for name in values],
                }
            ],
        },
        DIMENSION: endpoint,
        **values,
    }


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
