"""``SageMakerFrontEnd``: the local SageMaker runtime for the bidirectional stream, in front of a TTS container.

```python
with SageMakerFrontEnd(tts_server.ws_url, endpoint_name="kokoro-tts") as front:
    front.endpoint_url  # https://localhost:<port>  (AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2)
    front.ca_file       # the local CA to trust     (SSL_CERT_FILE)
    front.environ()     # both, plus the dummy credentials and region, as environment variables
```

The server runs on its own thread and event loop (like :class:`relay_local.servers.BackgroundServer`), so
callers in any loop, or none, use it alike. It listens on 127.0.0.1 only; the URL names ``localhost``, which the
leaf certificate covers (as it does 127.0.0.1). With ``verify_signatures=True`` (the default) requests must be
signed with :attr:`credentials` (dummy keys, local only) for :attr:`region`.
"""

from __future__ import annotations

import asyncio
import ssl
import threading
from collections.abc import Mapping
from concurrent.futures import Future
from pathlib import Path
from types import TracebackType
from typing import Any

from relay_local.sagemaker_frontend.certs import LocalTls, ensure_local_tls
from relay_local.sagemaker_frontend.server import DEFAULT_ACCOUNT_ID, FrontEndServer
from relay_local.sagemaker_frontend.sigv4 import LocalCredentials

DEFAULT_ENDPOINT_NAME = "kokoro-tts"
ENDPOINT_URL_ENV = "AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2"


class FrontEndStartError(RuntimeError):
    """The front end could not start; the message says why."""


def server_ssl_context(tls: LocalTls) -> ssl.SSLContext:
    """A TLS server context with the leaf certificate, TLS 1.2+ and ALPN ``h2`` only (SageMaker has no h2c)."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(tls.cert_file, tls.key_file)
    context.set_alpn_protocols(["h2"])
    return context


class SageMakerFrontEnd:
    """The SageMaker bidirectional-stream runtime on loopback for one or more endpoints (name → container URL).

    ``container_ws_url`` is the container's ``ws://.../invocations-bidirectional-stream``, served as
    ``endpoint_name``; ``endpoints`` adds more. ``tls_dir`` holds the local CA (default: the user cache)."""

    def __init__(
        self,
        container_ws_url: str,
        *,
        endpoint_name: str = DEFAULT_ENDPOINT_NAME,
        endpoints: Mapping[str, str] | None = None,
        verify_signatures: bool = True,
        credentials: LocalCredentials | None = None,
        tls_dir: Path | None = None,
        account_id: str = DEFAULT_ACCOUNT_ID,
    ) -> None:
        self.endpoint_name = endpoint_name
        self.credentials = credentials or LocalCredentials()
        self.tls = ensure_local_tls(tls_dir)
        self._endpoints = {endpoint_name: container_ws_url, **(endpoints or {})}
        self._verify = verify_signatures
        self._account_id = account_id
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._server: FrontEndServer | None = None
        self.port = 0

    @property
    def endpoint_url(self) -> str:
        """``https://localhost:<port>``: what ``AWS_ENDPOINT_URL_SAGEMAKER_RUNTIME_HTTP2`` should say."""
        return f"https://localhost:{self.port}"

    @property
    def ca_file(self) -> Path:
        """The local CA certificate (PEM) clients must trust (``SSL_CERT_FILE`` for awscrt)."""
        return self.tls.ca_file

    @property
    def region(self) -> str:
        """The region requests must be signed for."""
        return self.credentials.region

    @property
    def streams_served(self) -> int:
        """How many streams were accepted (routed to a container) so far."""
        return self._server.streams_served if self._server is not None else 0

    @property
    def connections_accepted(self) -> int:
        """How many client connections (TLS + HTTP/2) were accepted so far."""
        return self._server.connections_accepted if self._server is not None else 0

    def environ(self) -> dict[str, str]:
        """The environment a separate client process needs: endpoint URL, CA, dummy credentials, region."""
        return {
            ENDPOINT_URL_ENV: self.endpoint_url,
            "SSL_CERT_FILE": str(self.ca_file),
            "AWS_ACCESS_KEY_ID": self.credentials.access_key_id,
            "AWS_SECRET_ACCESS_KEY": self.credentials.secret_access_key,
            "AWS_REGION": self.region,
        }

    def start(self, timeout_s: float = 10.0, *, port: int = 0) -> SageMakerFrontEnd:
        """Start serving on loopback ``port`` (0 = a free port), blocking until it listens."""
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._server = FrontEndServer(
            self._endpoints,
            ssl_context=server_ssl_context(self.tls),
            credentials=self.credentials if self._verify else None,
            account_id=self._account_id,
        )
        self._thread = threading.Thread(target=loop.run_forever, name="sagemaker-frontend", daemon=True)
        self._thread.start()
        started: Future[int] = asyncio.run_coroutine_threadsafe(self._server.start(port=port), loop)
        try:
            self.port = started.result(timeout_s)
        except (OSError, TimeoutError) as exc:
            self.stop()
            raise FrontEndStartError(f"the SageMaker front end did not start: {exc}") from exc
        return self

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop serving, end every stream, and join the thread (idempotent)."""
        loop, server, thread = self._loop, self._server, self._thread
        self._loop = self._thread = None
        if loop is None or thread is None:
            return
        if server is not None:
            closing: Future[Any] = asyncio.run_coroutine_threadsafe(server.close(), loop)
            try:
                closing.result(timeout_s)
            except TimeoutError:
                closing.cancel()
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout_s)
        loop.close()

    def __enter__(self) -> SageMakerFrontEnd:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


__all__ = ["DEFAULT_ENDPOINT_NAME", "ENDPOINT_URL_ENV", "FrontEndStartError", "SageMakerFrontEnd", "server_ssl_context"]
