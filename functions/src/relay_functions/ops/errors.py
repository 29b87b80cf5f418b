"""The errors the ops task functions raise. The class name is what Step Functions sees as the task's error
(``errorType`` of a Lambda failure), so the state machines catch these names; each message says what was observed."""

from __future__ import annotations


class OpsError(Exception):
    """Base of every ops task error. ``str(error)`` is the message shown as the execution's cause."""


class SmokeCheckError(OpsError):
    """A smoke-test check observed something wrong (the message names the check and what it saw)."""


class AuditSourceError(OpsError):
    """The dependency audit could not read its inventory (lock file) or any advisory source."""


class DeleteRefusedError(OpsError):
    """A resource asked to be deleted still exists and its deletion was refused (the message quotes the refusal)."""


class SharedResourceError(OpsError):
    """The cleanup was asked to delete something other deployments share (the message says what to do instead)."""


class InvalidTaskInputError(OpsError):
    """A task was given input it cannot use (the message names the field)."""


__all__ = [
    "AuditSourceError",
    "DeleteRefusedError",
    "InvalidTaskInputError",
    "OpsError",
    "SharedResourceError",
    "SmokeCheckError",
]
