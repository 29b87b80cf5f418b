"""Error responses shaped like AWS's REST-JSON services answer them (``x-amzn-errortype`` header + JSON body with
``message``), so botocore raises the same modeled exception classes (``GoneException``, ...) against the local
endpoints as against AWS."""

from __future__ import annotations

from starlette.responses import JSONResponse


def aws_error(status_code: int, error_type: str, message: str) -> JSONResponse:
    """An AWS REST-JSON error: ``error_type`` is the modeled shape name (e.g. ``GoneException``)."""
    return JSONResponse(
        {"message": message, "Message": message},
        status_code=status_code,
        headers={"x-amzn-errortype": f"{error_type}:", "x-amzn-requestid": "local"},
    )


__all__ = ["aws_error"]
