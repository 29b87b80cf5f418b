"""The front end's sans-I/O parts: the local CA, the event-stream framing, and the SigV4 checks.

The SigV4 checks are an independent implementation; they are cross-checked here against the signer the SDK
itself uses (``aws_sdk_signers``), for the request and for the chain of event signatures.
"""

from __future__ import annotations

import asyncio
import datetime
import random
import ssl
from binascii import hexlify
from pathlib import Path
from typing import Any

import pytest
from aws_sdk_signers import URI, AWSCredentialIdentity, AWSRequest, Field, Fields, SigV4Signer
from aws_sdk_signers.signers import AsyncEventSigner
from cryptography import x509
from smithy_aws_event_stream.events import EventHeaderEncoder, EventMessage

from relay_local.sagemaker_frontend.certs import ensure_local_tls
from relay_local.sagemaker_frontend.eventstream import (
    EnvelopeDecoder,
    EventStreamError,
    decode_message,
    payload_part,
    request_part,
)
from relay_local.sagemaker_frontend.frontend import server_ssl_context
from relay_local.sagemaker_frontend.sigv4 import (
    EventSignatureChain,
    LocalCredentials,
    SignatureRejected,
    encoded_date_header,
    verify_request,
)

CREDENTIALS = LocalCredentials(
    access_key_id="AKIDTESTFRONTEND0001", secret_access_key="front-secret", region="us-west-2"
)
PATH = "/endpoints/kokoro-tts/invocations-bidirectional-stream"


# --- the local CA ------------------------------------------------------------------------------------------


def test_local_ca_is_made_once_and_its_leaf_covers_localhost_and_127_0_0_1(tmp_path: Path) -> None:
    tls = ensure_local_tls(tmp_path)
    first = (tls.ca_file.read_bytes(), tls.cert_file.read_bytes())
    assert (tls.key_file.stat().st_mode & 0o777) == 0o600
    ca = x509.load_pem_x509_certificate(first[0])
    leaf = x509.load_pem_x509_certificate(first[1])
    leaf.verify_directly_issued_by(ca)
    names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert [str(ip) for ip in names.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    # Reused as is (a CA a user trusts stays valid); a broken leaf regenerates the set.
    again = ensure_local_tls(tmp_path)
    assert (again.ca_file.read_bytes(), again.cert_file.read_bytes()) == first
    tls.cert_file.write_text("not a certificate")
    renewed = ensure_local_tls(tmp_path)
    assert renewed.ca_file.read_bytes() != first[0]
    # A client trusting only the CA accepts the server context for both names.
    client = ssl.create_default_context(cafile=renewed.ca_file)
    server = server_ssl_context(renewed)
    for name in ("localhost", "127.0.0.1"):
        assert _handshake(client, server, name) == "h2"


def _handshake(client: ssl.SSLContext, server: ssl.SSLContext, server_name: str) -> str | None:
    client.set_alpn_protocols(["h2"])
    c_in, c_out, s_in, s_out = ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO(), ssl.MemoryBIO()
    c = client.wrap_bio(c_in, c_out, server_hostname=server_name)
    s = server.wrap_bio(s_in, s_out, server_side=True)
    for _ in range(10):
        for side in (c, s):
            try:
                side.do_handshake()
            except ssl.SSLWantReadError:
                pass
        s_in.write(c_out.read())
        c_in.write(s_out.read())
    return c.selected_alpn_protocol()


# --- event-stream framing ----------------------------------------------------------------------------------


def _envelope(inner: EventMessage) -> bytes:
    return EventMessage(headers={}, payload=inner.encode()).encode()


def _part(data: bytes, **headers: str) -> EventMessage:
    return EventMessage(headers={":message-type": "event", ":event-type": "PayloadPart", **headers}, payload=data)


def test_envelopes_are_reassembled_from_any_split_of_the_body() -> None:
    body = b"".join(
        [
            _envelope(_part(b'{"type":"close"}', DataType="UTF8", CompletionState="COMPLETE")),
            _envelope(_part(b"\x00\x01", DataType="BINARY")),
            _envelope(_part(b"pa", CompletionState="PARTIAL")),
            EventMessage().encode(),
        ]
    )
    rng = random.Random(3)
    for _ in range(30):
        cuts = sorted(rng.sample(range(1, len(body)), k=rng.randint(1, 12)))
        decoder = EnvelopeDecoder()
        envelopes = []
        for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True):
            envelopes += decoder.feed(body[a:b])
        assert decoder.pending == 0
        assert [e.is_end for e in envelopes] == [False, False, False, True]
        parts = [request_part(e) for e in envelopes[:3]]
        assert [(p.data, p.is_text, p.is_final) for p in parts] == [
            (b'{"type":"close"}', True, True),
            (b"\x00\x01", False, True),
            (b"pa", False, False),
        ]


def test_malformed_input_is_a_typed_error() -> None:
    good = _envelope(_part(b"x"))
    corrupted = good[:-1] + bytes([good[-1] ^ 0xFF])
    with pytest.raises(EventStreamError, match="malformed"):
        EnvelopeDecoder().feed(corrupted)
    with pytest.raises(EventStreamError, match="not valid"):
        EnvelopeDecoder().feed(b"\xff\xff\xff\xff" + b"\x00" * 12)
    wrong_kind = EnvelopeDecoder().feed(_envelope(EventMessage(headers={":message-type": "event", ":event-type": "X"})))
    with pytest.raises(EventStreamError, match="PayloadPart"):
        request_part(wrong_kind[0])
    bad_type = EnvelopeDecoder().feed(_envelope(_part(b"x", DataType="JSON")))
    with pytest.raises(EventStreamError, match="DataType"):
        request_part(bad_type[0])


def test_response_parts_carry_data_type_and_completion() -> None:
    text = decode_message(payload_part("é".encode(), text=True))
    assert (text.headers["DataType"], text.headers["CompletionState"], text.payload) == (
        "UTF8",
        "COMPLETE",
        "é".encode(),
    )
    partial = decode_message(payload_part(b"\x01", text=False, final=False))
    assert (partial.headers["DataType"], partial.headers["CompletionState"]) == ("BINARY", "PARTIAL")


# --- SigV4, against the SDK's own signer -------------------------------------------------------------------


def _signed_request(
    *, secret: str = "front-secret", region: str = "us-west-2", date: datetime.datetime | None = None
) -> tuple[dict[str, str], str]:
    """Headers of a request signed by ``aws_sdk_signers`` the way the SDK signs the stream, and its signature."""
    request = AWSRequest(
        destination=URI(host="localhost", port=8443, path=PATH),
        method="POST",
        body=None,
        fields=Fields([Field(name="Content-Type", values=["application/vnd.amazon.eventstream"])]),
    )
    identity = AWSCredentialIdentity(access_key_id=CREDENTIALS.access_key_id, secret_access_key=secret)
    when = (date or datetime.datetime.now(datetime.UTC)).strftime("%Y%m%dT%H%M%SZ")
    signed = SigV4Signer().sign(
        request=request, identity=identity, properties={"region": region, "service": "sagemaker", "date": when}
    )
    headers = {name.lower(): signed.fields[name].as_string() for name in signed.fields.entries}
    headers.setdefault("host", "localhost:8443")
    signature = headers["authorization"].rsplit("Signature=", 1)[1]
    return headers, signature


def test_request_signed_by_the_sdk_signer_verifies() -> None:
    headers, signature = _signed_request()
    verified = verify_request(method="POST", path=PATH, headers=headers, credentials=CREDENTIALS)
    assert verified.seed_signature == signature
    # HTTP/2 carries the host as :authority
    h2_headers = {name: value for name, value in headers.items() if name != "host"} | {":authority": "localhost:8443"}
    verify_request(method="POST", path=PATH, headers=h2_headers, credentials=CREDENTIALS)


@pytest.mark.parametrize(
    ("change", "error_type"),
    [
        ({"secret": "wrong"}, "InvalidSignatureException"),
        ({"region": "eu-west-1"}, "InvalidSignatureException"),
        ({"date": datetime.datetime.now(datetime.UTC) - datetime.timedelta(minutes=20)}, "InvalidSignatureException"),
    ],
)
def test_what_aws_would_reject_is_rejected(change: dict[str, object], error_type: str) -> None:
    headers, _ = _signed_request(**change)  # type: ignore[arg-type]
    with pytest.raises(SignatureRejected) as failure:
        verify_request(method="POST", path=PATH, headers=headers, credentials=CREDENTIALS)
    assert failure.value.error_type == error_type


def test_unknown_key_tampered_path_and_unsigned_requests_are_rejected() -> None:
    headers, _ = _signed_request()
    with pytest.raises(SignatureRejected, match="does not match"):
        verify_request(method="POST", path=PATH.replace("kokoro", "other"), headers=headers, credentials=CREDENTIALS)
    other_key = LocalCredentials(
        access_key_id="AKIDSOMEONEELSE00001", secret_access_key="front-secret", region="us-west-2"
    )
    with pytest.raises(SignatureRejected) as failure:
        verify_request(method="POST", path=PATH, headers=headers, credentials=other_key)
    assert failure.value.error_type == "UnrecognizedClientException"
    with pytest.raises(SignatureRejected) as unsigned:
        verify_request(method="POST", path=PATH, headers={"host": "localhost"}, credentials=CREDENTIALS)
    assert unsigned.value.error_type == "MissingAuthenticationTokenException"


def test_event_chain_signed_by_the_sdk_signer_verifies_in_order_only() -> None:
    headers, _ = _signed_request()
    verified = verify_request(method="POST", path=PATH, headers=headers, credentials=CREDENTIALS)
    identity = AWSCredentialIdentity(access_key_id=CREDENTIALS.access_key_id, secret_access_key="front-secret")

    async def sign_all() -> list[Any]:
        signer = AsyncEventSigner(
            initial_signature=verified.seed_signature.encode(), event_encoder_cls=EventHeaderEncoder
        )
        props = {"region": "us-west-2", "service": "sagemaker"}
        events = [await signer.sign(event=_part(bytes([i])), identity=identity, properties=props) for i in range(3)]  # type: ignore[arg-type]
        events.append(await signer.sign_empty(event=EventMessage(), identity=identity, properties=props))  # type: ignore[arg-type]
        return events

    events = asyncio.run(sign_all())
    for event in events:
        # The :date header re-encodes to the bytes that were signed.
        encoder = EventHeaderEncoder()
        encoder.encode_headers({":date": event.headers[":date"]})
        assert encoded_date_header(event.headers[":date"]) == encoder.get_result()
    chain = EventSignatureChain(verified, "front-secret")
    for event in events:
        chain.verify(event.headers[":date"], event.headers[":chunk-signature"], event.payload)
    assert chain.verified == 4

    out_of_order = EventSignatureChain(verified, "front-secret")
    with pytest.raises(SignatureRejected, match="event 0"):
        out_of_order.verify(events[1].headers[":date"], events[1].headers[":chunk-signature"], events[1].payload)
    tampered = EventSignatureChain(verified, "front-secret")
    with pytest.raises(SignatureRejected):
        tampered.verify(events[0].headers[":date"], events[0].headers[":chunk-signature"], b"changed")
    assert hexlify(events[0].headers[":chunk-signature"]).decode() != verified.seed_signature
