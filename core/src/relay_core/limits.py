"""Every limit of the system, in one place.

Platform quotas (API Gateway, SageMaker, AgentCore) are facts of AWS; the relay's own limits are chosen so
that a single request stays well inside them. Change a limit here and every part follows.
"""

from __future__ import annotations

from typing import Final

# --- Audio format on every wire ---------------------------------------------------------------------------
SAMPLE_RATE: Final = 24_000
"""Kokoro-82M output rate, Hz."""
SAMPLE_WIDTH_BYTES: Final = 2
"""s16le: two bytes per sample."""
CHANNELS: Final = 1
PCM_FORMAT: Final = "pcm_s16le"
OPUS_FORMAT: Final = "opus"
"""The codec name of raw Opus packets (no Ogg container) on the client wire (``audio_stream_start.format``)."""
OPUS_FRAME_SAMPLES: Final = 480
"""Samples (at SAMPLE_RATE) in one Opus packet sent to clients: 20 ms frames."""
OPUS_BITRATE: Final = 24_000
"""Bits per second of the Opus speech sent to clients (application voip): about 3 KB/s against PCM's 48 KB/s."""

# --- Model ------------------------------------------------------------------------------------------------
MAX_PHONEME_TOKENS: Final = 510
"""Kokoro's context: a segment never has more phoneme tokens than this."""

# --- TTS session (container WebSocket, ARCHITECTURE §1) ----------------------------------------------------
MAX_TEXT_CHARS: Final = 5_000
"""Characters in one synthesize request; split longer texts into several requests."""
MAX_MESSAGE_BYTES: Final = 64 * 1024
"""Bytes in one client frame of the TTS session."""
MIN_SPEED: Final = 0.25
MAX_SPEED: Final = 4.0
"""Speed is a scalar of the model's predicted durations; 0.25–4.0 is OpenAI's ``/v1/audio/speech`` range, and every
route (WebSocket, ``/invocations``, OpenAI, the agent, the client protocol) accepts the same one."""
DEFAULT_SPEED: Final = 1.0
MAX_REQUEST_ID_CHARS: Final = 128
MAX_VOICE_SPEC_CHARS: Final = 256
MAX_QUEUED_REQUESTS: Final = 256
"""Requests one session may have waiting; an agent sends one per sentence, so this is generous."""

# --- HTTP /invocations (ARCHITECTURE §2) -------------------------------------------------------------------
MIN_BITRATE_KBPS: Final = 32
MAX_BITRATE_KBPS: Final = 320
"""``bitrate_kbps`` of a compressed answer (mp3, opus, aac); absent = the encoder's default."""
SAGEMAKER_PING_TIMEOUT_S: Final = 2.0
SAGEMAKER_RESPONSE_TIMEOUT_S: Final = 60.0
SAGEMAKER_WS_PING_INTERVAL_S: Final = 60.0

# --- AgentCore (ARCHITECTURE §3) ---------------------------------------------------------------------------
AGENTCORE_PORT: Final = 8080
AGENTCORE_SESSION_ID_MIN_CHARS: Final = 33
AGENTCORE_SESSION_ID_MAX_CHARS: Final = 256
MAX_PROMPT_CHARS: Final = 20_000

# --- API Gateway WebSocket (ARCHITECTURE §4) ---------------------------------------------------------------
APIGW_FRAME_BYTES: Final = 32 * 1024
APIGW_MESSAGE_BYTES: Final = 128 * 1024
APIGW_INTEGRATION_TIMEOUT_S: Final = 29.0
APIGW_IDLE_TIMEOUT_S: Final = 10 * 60
APIGW_CONNECTION_LIFETIME_S: Final = 2 * 60 * 60

# --- Client protocol over the API Gateway WebSocket (ARCHITECTURE §4, docs/client-protocol.md) -------------
CLIENT_FRAME_BUDGET_BYTES: Final = 31 * 1024
"""Most UTF-8 bytes in one gateway→client message: under APIGW_FRAME_BYTES (32 KiB) and under 32,000 (32 KB
read as decimal) with room to spare, so no message is ever split into WebSocket continuation frames."""
TEXT_COALESCE_WINDOW_S: Final = 0.1
"""The relay sends at most one ``text_delta`` per this many seconds (later deltas join it; relay_core.text.coalescing):
text shows at most this late, and a token-by-token reply costs a few messages a second, not one per token."""
CLIENT_MESSAGE_MAX_BYTES: Final = APIGW_MESSAGE_BYTES
"""Most UTF-8 bytes in one client→gateway message (API Gateway's message quota; room for a MAX_PROMPT_CHARS prompt)."""
MAX_TURN_ID_CHARS: Final = 64
"""A turn id is 1..64 characters of ``A-Z a-z 0-9 - _ . :`` (it keys the turns table and is the agent request id)."""
RESUME_WINDOW_S: Final = 30
"""Seconds after a connection drops during which a new connection of the same user may ``resume`` the turn."""
RESUME_BUFFER_MAX_MESSAGES: Final = 4096
"""Most recent messages of one turn kept for ``resume``; older ones are evicted first."""
RESUME_BUFFER_MAX_BYTES: Final = 8 * 1024 * 1024
"""Most UTF-8 bytes of recent messages of one turn kept for ``resume`` (about two minutes of audio)."""
