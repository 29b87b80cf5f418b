"""Typed readers for JSON objects: the one place that turns loose JSON into checked Python values.

Each reader raises :class:`~relay_core.errors.InvalidFieldError` (or ``LimitExceededError``) with a message
that names the field and says what is expected, so every protocol reports bad input the same way.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from relay_core.errors import InvalidFieldError, InvalidJsonError, LimitExceededError

JsonObject = dict[str, Any]


def decode_json_object(data: str | bytes, *, max_bytes: int, what: str = "message", per: str = "frame") -> JsonObject:
    """Decode one frame (text or binary, UTF-8) into a JSON object, enforcing a size limit.

    ``what`` names the thing in error messages ("message", "request body") and ``per`` the unit it arrives in
    ("frame", "request"), so an HTTP caller is told about request bodies, not frames."""
    size = len(data) if isinstance(data, bytes) else len(data.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise LimitExceededError(f"{what} is {size} bytes; the limit is {max_bytes} bytes: send less per {per}")
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InvalidJsonError(f"{what} is not UTF-8 ({exc.reason} at byte {exc.start}): send UTF-8 JSON") from exc
    else:
        text = data
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InvalidJsonError(f"{what} is not valid JSON: send one JSON object per {per}") from exc
    except ValueError as exc:  # e.g. lone surrogates, huge integers
        raise InvalidJsonError(f"{what} is not valid JSON ({exc}): send one JSON object per {per}") from exc
    if not isinstance(value, dict):
        raise InvalidJsonError(
            f"{what} must be a JSON object, not {type(value).__name__}: send one JSON object per {per}"
        )
    return value


def encode_json(obj: Mapping[str, Any]) -> str:
    """Serialize compactly, keeping non-ASCII text readable; never emits NaN or Infinity."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def get_str(
    obj: Mapping[str, Any],
    name: str,
    *,
    required: bool = False,
    max_chars: int | None = None,
    allow_empty: bool = True,
    request_id: str | None = None,
) -> str | None:
    """Read an optional (or required) string field."""
    value = obj.get(name)
    if value is None:
        if required:
            raise InvalidFieldError(f"'{name}' is required (a string)", request_id=request_id)
        return None
    if not isinstance(value, str):
        raise InvalidFieldError(f"'{name}' must be a string, not {type(value).__name__}", request_id=request_id)
    if not allow_empty and not value.strip():
        raise InvalidFieldError(f"'{name}' must not be empty", request_id=request_id)
    if max_chars is not None and len(value) > max_chars:
        raise LimitExceededError(
            f"'{name}' has {len(value)} characters; the limit is {max_chars}", request_id=request_id
        )
    return value


def get_number(
    obj: Mapping[str, Any],
    name: str,
    *,
    default: float,
    minimum: float,
    maximum: float,
    request_id: str | None = None,
) -> float:
    """Read an optional finite number within ``[minimum, maximum]``."""
    value = obj.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidFieldError(f"'{name}' must be a number, not {type(value).__name__}", request_id=request_id)
    number = float(value)
    if not math.isfinite(number) or not minimum <= number <= maximum:
        raise InvalidFieldError(f"'{name}' must be between {minimum} and {maximum}; got {value}", request_id=request_id)
    return number


def get_bool(obj: Mapping[str, Any], name: str, *, default: bool, request_id: str | None = None) -> bool:
    """Read an optional boolean field."""
    value = obj.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InvalidFieldError(f"'{name}' must be true or false", request_id=request_id)
    return value


def get_int(obj: Mapping[str, Any], name: str, *, minimum: int = 0, request_id: str | None = None) -> int:
    """Read a required integer field that is at least ``minimum``."""
    value = obj.get(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidFieldError(f"'{name}' must be an integer >= {minimum}", request_id=request_id)
    return value


def peek_request_id(obj: Mapping[str, Any]) -> str | None:
    """The request id of a message, if it has a usable one: used to address an error about that message."""
    value = obj.get("request_id")
    return value if isinstance(value, str) and 0 < len(value) <= 256 else None
