"""A local certificate authority and a leaf certificate for the SageMaker front end, made on first use.

The SageMaker runtime speaks HTTP/2 over TLS only (no h2c), so the local front end needs a certificate its
clients trust. :func:`ensure_local_tls` writes, once, into a directory (default
``$KOKORO_RELAY_CACHE/sagemaker-frontend`` or ``~/.cache/kokoro-relay/sagemaker-frontend``):

- ``ca.pem``: a self-signed CA certificate (the file clients trust, through ``SSL_CERT_FILE`` or an explicit CA
  path), and ``ca-key.pem`` (its key, mode 0600);
- ``leaf.pem`` / ``leaf-key.pem``: a server certificate signed by that CA for ``localhost`` and ``127.0.0.1``.

Guarantees: files that exist and are still valid (not expiring within a day, leaf signed by the CA on disk,
right names) are reused as they are, so a CA a user already trusts stays valid across runs; anything missing,
expired or mismatched is regenerated as a whole. Keys are EC P-256 and never leave the directory.
"""

from __future__ import annotations

import datetime
import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

CA_COMMON_NAME: Final = "Kokoro Relay local SageMaker CA"
LEAF_DNS_NAMES: Final = ("localhost",)
LEAF_IP_ADDRESSES: Final = ("127.0.0.1",)
VALIDITY: Final = datetime.timedelta(days=825)
RENEW_BEFORE: Final = datetime.timedelta(days=1)


@dataclass(frozen=True, slots=True)
class LocalTls:
    """Paths of the local CA and the server's leaf certificate and key (all PEM)."""

    ca_file: Path
    cert_file: Path
    key_file: Path


def default_tls_dir() -> Path:
    """``$KOKORO_RELAY_CACHE/sagemaker-frontend``, else ``~/.cache/kokoro-relay/sagemaker-frontend``."""
    cache = os.environ.get("KOKORO_RELAY_CACHE")
    base = Path(cache) if cache else Path.home() / ".cache" / "kokoro-relay"
    return base / "sagemaker-frontend"


def ensure_local_tls(directory: Path | None = None) -> LocalTls:
    """The local CA and leaf certificate in ``directory`` (default :func:`default_tls_dir`), made if needed."""
    directory = directory or default_tls_dir()
    tls = LocalTls(ca_file=directory / "ca.pem", cert_file=directory / "leaf.pem", key_file=directory / "leaf-key.pem")
    if not _still_valid(tls):
        _generate(directory, tls)
    return tls


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC)


def _still_valid(tls: LocalTls) -> bool:
    if not (tls.ca_file.is_file() and tls.cert_file.is_file() and tls.key_file.is_file()):
        return False
    try:
        ca = x509.load_pem_x509_certificate(tls.ca_file.read_bytes())
        leaf = x509.load_pem_x509_certificate(tls.cert_file.read_bytes())
        key = serialization.load_pem_private_key(tls.key_file.read_bytes(), password=None)
        leaf.verify_directly_issued_by(ca)
        names = leaf.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except (ValueError, TypeError, InvalidSignature, x509.ExtensionNotFound):
        return False
    horizon = _now() + RENEW_BEFORE
    dns = set(names.get_values_for_type(x509.DNSName))
    ips = {str(ip) for ip in names.get_values_for_type(x509.IPAddress)}
    return (
        ca.not_valid_after_utc > horizon
        and leaf.not_valid_after_utc > horizon
        and dns >= set(LEAF_DNS_NAMES)
        and ips >= set(LEAF_IP_ADDRESSES)
        and key.public_key() == leaf.public_key()
    )


def _generate(directory: Path, tls: LocalTls) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    now = _now()
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, CA_COMMON_NAME)])
    ca = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    leaf_key = ec.generate_private_key(ec.SECP256R1())
    san = [x509.DNSName(name) for name in LEAF_DNS_NAMES] + [
        x509.IPAddress(ipaddress.ip_address(ip)) for ip in LEAF_IP_ADDRESSES
    ]
    leaf = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, LEAF_DNS_NAMES[0])]))
        .issuer_name(ca_name)
        .public_key(leaf_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + VALIDITY)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.SubjectAlternativeName(san), critical=False)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    _write_private(directory / "ca-key.pem", _key_pem(ca_key))
    _write_private(tls.key_file, _key_pem(leaf_key))
    tls.cert_file.write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    tls.ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)


__all__ = ["LocalTls", "default_tls_dir", "ensure_local_tls"]
