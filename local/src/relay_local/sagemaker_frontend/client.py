"""An awscrt HTTP/2 client for the SDK that trusts the front end's local CA, without touching the environment.

awscrt reads ``SSL_CERT_FILE`` when each client builds its TLS context, so a separate process (the agent
container, the smoke test) trusts the front end through that variable. Inside a process that also talks to
real AWS endpoints, replacing the trust store for every client is not wanted: :func:`local_ca_client_factory`
gives the agent's ``sagemaker`` transport (its ``http_client_factory``) clients that trust the local CA only.

``smithy-http`` 0.6 (pinned with the SDK) keeps the TLS context in ``AWSCRTHTTPClient._tls_ctx`` and offers no
option for a CA; :class:`LocalCaCrtClient` sets that one attribute after the parent's constructor, and keeps it
across the SDK's deep copies. ``tests/local/test_sagemaker_frontend_sdk.py`` checks it against the front end.
"""

from __future__ import annotations

from collections.abc import Callable
from copy import deepcopy
from pathlib import Path
from typing import Any

from awscrt import io as crt_io
from smithy_http.aio.crt import AWSCRTHTTPClient


class LocalCaCrtClient(AWSCRTHTTPClient):
    """``AWSCRTHTTPClient`` whose TLS trust store is exactly ``ca_file``."""

    def __init__(self, ca_file: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        options = crt_io.TlsContextOptions()
        options.override_default_trust_store_from_path(ca_filepath=str(ca_file))
        self._tls_ctx = crt_io.ClientTlsContext(options)
        self._ca_file = ca_file

    def __deepcopy__(self, memo: dict[int, Any]) -> LocalCaCrtClient:
        return LocalCaCrtClient(self._ca_file, eventloop=self._eventloop, client_config=deepcopy(self._config))


def local_ca_client_factory(ca_file: Path) -> Callable[[], LocalCaCrtClient]:
    """A factory of :class:`LocalCaCrtClient` for ``ca_file`` (the transport's ``http_client_factory``)."""

    def make() -> LocalCaCrtClient:
        return LocalCaCrtClient(ca_file)

    return make


__all__ = ["LocalCaCrtClient", "local_ca_client_factory"]
