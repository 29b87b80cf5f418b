"""The voice agent's defaults and bounds, and the local port plan: each number said once.

The agent's configuration (``voice_agent.config.AgentConfig``), its turn engine, its CLI, ``relay speak`` and the
tests all read these; nothing else spells them out.

Local port plan (one laptop, no flags needed): the TTS container app listens on :data:`LOCAL_TTS_PORT`, the agent
app on :data:`LOCAL_AGENT_PORT`, and the agent's default TTS URL points at the former. Container images keep
:data:`IMAGE_PORT` (8080), which SageMaker and AgentCore both require.
"""

from __future__ import annotations

from typing import Final

from relay_core import limits
from relay_core.audio import max_pcm_bytes_for_base64
from relay_core.client.framing import max_audio_pcm_bytes
from relay_core.tts.messages import SESSION_PATH

# --- Ports -------------------------------------------------------------------------------------------------
IMAGE_PORT: Final = limits.AGENTCORE_PORT
"""What both container images listen on (SageMaker and AgentCore require 8080)."""
LOCAL_TTS_PORT: Final = 8081
"""``kokoro-server``'s local default port."""
LOCAL_AGENT_PORT: Final = 8082
"""``voice-agent``'s local default port."""
LOCAL_HOST: Final = "127.0.0.1"
LOCAL_TTS_URL: Final = f"ws://{LOCAL_HOST}:{LOCAL_TTS_PORT}{SESSION_PATH}"
"""The agent's default TTS session URL: the local ``kokoro-server`` with no flags."""
LOCAL_AGENT_URL: Final = f"http://{LOCAL_HOST}:{LOCAL_AGENT_PORT}"
"""Where a local ``voice-agent`` with no flags answers ``/invocations``."""
LOCAL_BEDROCK_PORT: Final = 8083
"""The local Bedrock stand-in's port when it runs on its own (``python -m relay_local.bedrock``)."""
LOCAL_BEDROCK_URL: Final = f"http://{LOCAL_HOST}:{LOCAL_BEDROCK_PORT}"
"""Where that stand-in answers: the ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME`` an agent started by hand is given."""

# --- Sentences and audio ----------------------------------------------------------------------------------
FIRST_FRAGMENT_WORDS: Final = 4
"""First-fragment policy: the first piece may end at a clause mark once it holds this many words
(measured with bench/bench_agent_ttfa.py; see docs/benchmarks.md)."""
MAX_SENTENCE_CHARS: Final = 300
"""A sentence longer than this is cut at a clause or word boundary before it goes to the TTS."""
AUDIO_CHUNK_OVERHEAD_BYTES: Final = 512
"""JSON around the base64 of one ``audio_chunk`` event (type, seq, a request id of up to 128 chars, quotes)."""
AUDIO_CHUNK_BYTES: Final = min(
    max_audio_pcm_bytes(limits.CLIENT_FRAME_BUDGET_BYTES),
    max_pcm_bytes_for_base64(limits.APIGW_FRAME_BYTES, overhead_bytes=AUDIO_CHUNK_OVERHEAD_BYTES),
)
"""Largest PCM slice per ``audio_chunk``: the gateway relays one agent chunk as exactly ONE client message (its
framed ``audio`` message fits ``limits.CLIENT_FRAME_BUDGET_BYTES`` whatever the turn id), and the agent's event
itself fits one API Gateway WebSocket frame (32 KB)."""
SPEAK_TOKENS_PER_S: Final = 40.0
"""The offline ``speak`` model's pace (a realistic LLM rate)."""
LOCAL_ECHO_MODEL_ID: Final = "local.echo"
"""The local Bedrock stand-in's echo model (``relay_local.bedrock``), which the ``speak`` model setting names."""
LOCAL_SMOLLM2_MODEL_ID: Final = "local.smollm2-135m-instruct"
"""The local Bedrock stand-in's small real model (SmolLM2-135M-Instruct), which ``--model smollm2`` names: said here so
that the ``relay`` options name it without importing the stand-in."""
MODEL_ATTEMPTS: Final = 2
"""Model calls per turn when the model service throttles (Strands' retry strategy; its default, 6 attempts over
about two minutes, is silence no listener waits through). The SDK's own HTTP retries come on top."""
MODEL_RETRY_DELAY_S: Final = 1
"""Seconds before that one retry."""
ECHO_RATE_FIELD: Final = "tokens_per_s"
"""The ``additionalModelRequestFields`` member that sets the echo model's pace."""
LOCAL_CREDENTIAL: Final = "local"
"""The access key id and secret the local Bedrock stand-in is called with where no real credentials are needed (it
accepts any SigV4 signature): what the ``speak`` model signs with, and what the stand-in's environment sets where a
process has none."""

# --- Timing ------------------------------------------------------------------------------------------------
CANCEL_GRACE_S: Final = 0.5
"""After a cancel (or a caller gone), how long the model may take to stop at its own checkpoint before its task
is cancelled outright. Well under the one second within which a turn's work must stop."""
TTS_CONNECT_TIMEOUT_S: Final = 5.0
"""Opening a TTS session."""
TTS_CLOSE_TIMEOUT_S: Final = 1.0
"""Waiting for the TTS server to answer our close; after it the connection is dropped."""
TTS_CAPACITY_WAIT_S: Final = 20.0
"""How long a turn keeps trying for a TTS session while an older TTS container turns sessions away as full
(WebSocket close 1013, try again later) before it ends with ``tts_at_capacity``; the text keeps flowing meanwhile
(``VOICE_AGENT_TTS_CAPACITY_WAIT_S``; docs/capacity.md). A current container queues such a session instead and
bounds the wait itself (``KOKORO_QUEUE_WAIT_S``): this setting does not apply to it."""
TTS_CAPACITY_BACKOFF_S: Final = (0.1, 2.0)
"""Backoff between those tries: full jitter, uniform in [0, min(cap, base x 2^attempt)] for (base, cap)."""
BARGE_IN_TIMEOUT_S: Final = 10.0
"""How long a new prompt waits for the conversation's cancelled turn to end before it is refused with
``conversation_busy`` (a cancelled turn normally ends within :data:`CANCEL_GRACE_S` plus a TTS close)."""

# --- Bounds ------------------------------------------------------------------------------------------------
TURN_EVENT_QUEUE: Final = 64
"""Events a turn buffers for a slow reader (at most ~2 MB of audio); beyond it the turn waits for the reader."""
TURN_SENTENCE_QUEUE: Final = limits.MAX_QUEUED_REQUESTS
"""Sentences written but not yet handed to the TTS session (the container queues as many per session)."""
MAX_CONVERSATIONS: Final = 256
"""Conversations (Strands agents with their history) one agent process keeps; least recently used go first."""

# --- Conversation history (docs/agent.md "History") ---------------------------------------------------------
HISTORY_WINDOW_MESSAGES: Final = 40
"""Messages of a conversation the model is sent and an agent restores (20 exchanges of a prompt and its reply):
Strands' ``SlidingWindowConversationManager`` drops the oldest past it (``VOICE_AGENT_HISTORY_WINDOW_MESSAGES``)."""
HISTORY_PREFIX: Final = "conversations/"
"""Where in the history bucket Strands' ``S3SessionManager`` keeps the conversations (``VOICE_AGENT_HISTORY_PREFIX``):
``<prefix>session_<runtime session id>/``; the deployed runtime's role may touch nothing else of the bucket."""
HISTORY_AGENT_ID: Final = "voice"
"""The Strands agent id a conversation's messages are stored under (``.../agents/agent_voice/messages/``)."""
HISTORY_EXPIRY_DAYS: Final = 30
"""The history bucket's lifecycle rule deletes every object this many days after it was written, so a forgotten
conversation is gone within a month (after its last turn at most :data:`HISTORY_MAX_AGE_DAYS` + this)."""
HISTORY_MAX_AGE_DAYS: Final = HISTORY_EXPIRY_DAYS - 1
"""A conversation started longer ago than this starts over at its next turn (its stored history deleted first), so
the lifecycle rule, which deletes object by object, never removes part of a conversation that is still continued:
every object of a continued conversation is younger than its first, which is younger than this."""
MAX_SSE_EVENT_BYTES: Final = 1024 * 1024
"""Largest SSE event a decoder buffers (an agent event is at most one 32 KB audio chunk; this is generous)."""
