"""Voice packs read without unpickling (engines/voice_packs.py): the upstream ``.pt`` layout against torch's own
reader, the pinned digests against the published SHA256SUMS, and packs the reader must refuse."""

from __future__ import annotations

import hashlib
import io
import pickle
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from kokoro_server.engines import ModelFilesError
from kokoro_server.engines.model_files import default_voices_path
from kokoro_server.engines.voice_packs import (
    ENGLISH_VOICES,
    OFFICIAL_SHA256,
    OFFICIAL_TABLE_SHA256,
    check_official,
    describe,
    read_archive,
    read_packs,
    read_pt,
    table_sha256,
)
from kokoro_server.engines.voices import VoiceBank


def _sums(directory: Path) -> dict[str, str]:
    pairs = (line.split() for line in (directory / "SHA256SUMS").read_text().splitlines() if line.strip())
    return {file.removesuffix(".pt"): digest for digest, file in pairs}


def test_the_pinned_digests_are_the_published_ones(official_voices: Path) -> None:
    sums = _sums(official_voices)
    assert dict(OFFICIAL_SHA256) == sums
    assert len(sums) == 54
    for name, digest in sums.items():
        assert hashlib.sha256((official_voices / f"{name}.pt").read_bytes()).hexdigest() == digest, name
    assert len(ENGLISH_VOICES) == 28
    assert "af_heart" in ENGLISH_VOICES


def test_the_reader_gives_exactly_torchs_tensor(official_voices: Path) -> None:
    for file in sorted(official_voices.glob("*.pt")):
        expected = torch.load(file, map_location="cpu", weights_only=True)
        assert tuple(expected.shape) == (510, 1, 256)
        table = read_pt(file)
        assert table.dtype == np.float32
        assert not table.flags.writeable
        np.testing.assert_array_equal(table, expected[:, 0, :].numpy())
        assert table_sha256(table) == OFFICIAL_TABLE_SHA256[file.stem], file.name


def test_a_folder_named_otherwise_is_read_by_the_files_name(official_voices: Path) -> None:
    """``jm_kumo.pt`` holds ``jm_omega/data/0``: the voice is jm_kumo."""
    with zipfile.ZipFile(official_voices / "jm_kumo.pt") as archive:
        assert "jm_omega/data/0" in archive.namelist()
    assert list(read_packs(official_voices / "jm_kumo.pt")) == ["jm_kumo"]


def test_the_japanese_packs_are_bit_identical_to_the_embedded_ones(official_voices: Path) -> None:
    embedded = read_archive(default_voices_path())
    assert sorted(embedded) == ["jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo"]
    for name, table in embedded.items():
        assert read_pt(official_voices / f"{name}.pt").tobytes() == table.tobytes(), name
        assert describe(name, table, "embedded").official


def test_a_directory_loads_as_a_bank_without_torch(official_voices: Path) -> None:
    bank = VoiceBank.from_path(official_voices)
    assert len(bank.names()) == 54
    assert bank.resolve("af_heart").shape == (510, 256)


def test_what_a_name_says() -> None:
    table = np.zeros((510, 256), dtype=np.float32)
    facts = describe("bm_george", table, "installed")
    assert (facts.language, facts.gender, facts.official) == ("en-gb", "male", False)
    assert describe("zf_xiaoxiao", table, "installed").language == "zh"
    assert describe("mine", table, "installed").language == "unknown"
    with pytest.raises(ModelFilesError, match=r"af_heart.*SHA-256 .*refused"):
        check_official("af_heart", table, "x.pt")
    check_official("xf_mine", table, "x.pt")  # an unofficial name: only the shape is checked


def test_packs_of_the_wrong_shape_or_type_are_refused(tmp_path: Path) -> None:
    cases = {
        "short": torch.zeros(10, 256),
        "wide": torch.zeros(510, 1, 257),
        "double": torch.zeros(510, 1, 256, dtype=torch.float64),
        "transposed": torch.zeros(256, 510).t(),
        "sliced": torch.zeros(600, 1, 256)[:510],
    }
    for name, tensor in cases.items():
        torch.save(tensor, tmp_path / f"{name}.pt")
        with pytest.raises(ModelFilesError, match=name):
            read_pt(tmp_path / f"{name}.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a zip")
    with pytest.raises(ModelFilesError, match="cannot read voice"):
        read_pt(tmp_path / "junk.pt")


def test_a_2d_table_saved_by_torch_reads_too(tmp_path: Path) -> None:
    values = np.random.default_rng(1).standard_normal((510, 256)).astype(np.float32)
    torch.save(torch.from_numpy(values.copy()), tmp_path / "af_two_d.pt")
    np.testing.assert_array_equal(read_pt(tmp_path / "af_two_d.pt"), values)


class _Boom:
    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (Path.touch, ("BOOM",))


def test_no_pickled_code_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ``.pt`` whose pickle would create a file when unpickled: reading it creates nothing, and refuses it."""
    monkeypatch.chdir(tmp_path)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("evil/data.pkl", pickle.dumps(_Boom(), protocol=2))
        archive.writestr("evil/data/0", b"\0" * (510 * 256 * 4))
    (tmp_path / "af_evil.pt").write_bytes(buffer.getvalue())
    with pytest.raises(ModelFilesError, match="one tensor"):
        read_pt(tmp_path / "af_evil.pt")
    assert not (tmp_path / "BOOM").exists()
