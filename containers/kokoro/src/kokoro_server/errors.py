"""How failures become wire errors: one mapping from exceptions to (HTTP status, error code, message).

Every route answers errors the same way: JSON ``{"error": {"code", "message"}}`` over HTTP, an ``error`` event in
SSE, an ``error`` message on the WebSocket. The message always says what to do.
"""

from __future__ import annotations

from dataclasses import dataclass

from starlette.responses import JSONResponse

from kokoro_server.engines import EngineError, InvalidRequestError, UnknownVoiceError
from relay_core.errors import ProtocolError
from relay_core.tts.http_events import http_status
from relay_core.tts.messages import TtsErrorCode


@dataclass(frozen=True, slots=True)
class WireError:
    """An error as it goes out on any wire."""

    status: int
    code: str
    message: str

    @classmethod
    def of(cls, code: str, message: str) -> WireError:
        """An error with its code's one HTTP status (``relay_core.tts.http_events.HTTP_STATUS``)."""
        return cls(status=http_status(code), code=str(code), message=message)

    def response(self) -> JSONResponse:
        return JSONResponse({"error": {"code": self.code, "message": self.message}}, status_code=self.status)


def from_protocol_error(exc: ProtocolError) -> WireError:
    return WireError.of(exc.code, exc.message)


def from_engine_error(exc: EngineError) -> WireError:
    """Unknown voice and bad arguments are the client's (400); anything else failed in the model (500)."""
    if isinstance(exc, UnknownVoiceError):
        return WireError.of(TtsErrorCode.UNKNOWN_VOICE, str(exc))
    if isinstance(exc, InvalidRequestError):
        return WireError.of(TtsErrorCode.INVALID_FIELD, str(exc))
    return WireError.of(TtsErrorCode.SYNTHESIS_FAILED, f"synthesis failed: {exc}")


def internal_error(exc: BaseException) -> WireError:
    """An unexpected failure (a bug): reported without details beyond the exception type; the log has the rest."""
    return WireError.of(
        TtsErrorCode.INTERNAL,
        f"internal error ({type(exc).__name__}); the server log has the details: retry, or report it",
    )


def not_ready(reason: str) -> WireError:
    return WireError.of(TtsErrorCode.MODEL_NOT_READY, reason)


def http_exception(status: int, detail: str) -> WireError:
    """Starlette's own HTTP errors (an unknown path, a wrong method) in the same JSON shape as every other."""
    if status == 404:
        return WireError.of(
            TtsErrorCode.NOT_FOUND,
            f"{detail}: the routes are GET /ping, POST /invocations, "
            "WS /invocations-bidirectional-stream and the OpenAI-compatible /v1/... (docs/server.md)",
        )
    if status == 405:
        return WireError.of(TtsErrorCode.METHOD_NOT_ALLOWED, f"{detail}: this path takes another HTTP method")
    return WireError(status=status, code=TtsErrorCode.INVALID_MESSAGE.value, message=detail)
