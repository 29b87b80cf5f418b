"""How failures become wire errors: one mapping from exceptions to (HTTP status, error code, message).

Every route answers errors the same way: JSON ``{"error": {"code", "message"}}`` over HTTP, an ``error`` event in
SSE, an ``error`` message on the WebSocket. The message always says what to do.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.responses import JSONResponse

from kokoro_server.engines import EngineError, InvalidRequestError, UnknownVoiceError
from relay_core.errors import LimitExceededError, ProtocolError
from relay_core.tts_messages import TtsErrorCode

MODEL_NOT_READY = "model_not_ready"


@dataclass(frozen=True, slots=True)
class WireError:
    """An error as it goes out on any wire."""

    status: int
    code: str
    message: str

    def response(self) -> JSONResponse:
        return JSONResponse({"error": {"code": self.code, "message": self.message}}, status_code=self.status)


def from_protocol_error(exc: ProtocolError) -> WireError:
    status = 413 if isinstance(exc, LimitExceededError) else 400
    return WireError(status=status, code=exc.code, message=exc.message)


def from_engine_error(exc: EngineError) -> WireError:
    """Unknown voice and bad arguments are the client's (400); anything else failed in the model (500)."""
    if isinstance(exc, UnknownVoiceError):
        return WireError(status=400, code=TtsErrorCode.UNKNOWN_VOICE.value, message=str(exc))
    if isinstance(exc, InvalidRequestError):
        return WireError(status=400, code=TtsErrorCode.INVALID_FIELD.value, message=str(exc))
    return WireError(status=500, code=TtsErrorCode.SYNTHESIS_FAILED.value, message=f"synthesis failed: {exc}")


def internal_error(exc: BaseException) -> WireError:
    """An unexpected failure (a bug): reported without details beyond the exception type; the log has the rest."""
    return WireError(
        status=500,
        code=TtsErrorCode.INTERNAL.value,
        message=f"internal error ({type(exc).__name__}); the server log has the details: retry, or report it",
    )


def not_ready(reason: str) -> WireError:
    return WireError(status=503, code=MODEL_NOT_READY, message=reason)
