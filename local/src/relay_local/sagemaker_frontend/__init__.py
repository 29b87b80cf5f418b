"""A local SageMaker bidirectional-stream front end: HTTPS + HTTP/2 + event stream on one side, the TTS
container's WebSocket on the other, so the real SDK and the agent's ``sagemaker`` transport run here.

| Module | Concept |
|---|---|
| ``frontend`` | :class:`SageMakerFrontEnd`: start/stop on a thread, endpoint URL, CA file, client environment |
| ``server`` | the HTTP/2 server: routes, refusals, stream ↔ WebSocket relay, flow control |
| ``eventstream`` | request envelopes and parts in, response events out (sans-I/O) |
| ``sigv4`` | optional SigV4 checks of the request and of each event's chunk signature (sans-I/O) |
| ``certs`` | the local CA and the leaf certificate for localhost / 127.0.0.1, made on first use |
| ``client`` | an awscrt HTTP client factory that trusts the local CA without touching the environment |
"""

from relay_local.sagemaker_frontend.frontend import (
    DEFAULT_ENDPOINT_NAME,
    ENDPOINT_URL_ENV,
    FrontEndStartError,
    SageMakerFrontEnd,
)
from relay_local.sagemaker_frontend.sigv4 import LocalCredentials

__all__ = ["DEFAULT_ENDPOINT_NAME", "ENDPOINT_URL_ENV", "FrontEndStartError", "LocalCredentials", "SageMakerFrontEnd"]
