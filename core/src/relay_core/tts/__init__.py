"""The TTS container's wires: the bidirectional session (ARCHITECTURE §1: :mod:`.messages`, the server's machine
:mod:`.session`, the client's :mod:`.client`), the request/response protocol of ``POST /invocations`` (§2,
:mod:`.http_events`), and the per-request session metrics (:mod:`.metrics`)."""
