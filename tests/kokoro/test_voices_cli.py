"""``kokoro-server voices list | install | fetch`` (kokoro_server/voices_cli.py) on a temporary cache: the official
packs installed and fetched (from a local HTTP server on 127.0.0.1 serving them), checked against the pinned
digests, a tampered pack refused with one line and nothing installed, unofficial packs after a shape check."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import numpy as np
import pytest
import torch

from kokoro_server.cli import main
from kokoro_server.engines.voice_packs import ENGLISH_VOICES, OFFICIAL_SHA256, read_pt
from kokoro_server.voices_cli import BASE_URL_ENV

ServeVoices = Callable[[Path], AbstractContextManager[str]]

EMBEDDED = ["jf_alpha", "jf_gongitsune", "jf_nezumi", "jf_tebukuro", "jm_kumo"]


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache as ``$KOKORO_RELAY_CACHE``, installed voices loaded (the suite turns them off elsewhere)."""
    directory = tmp_path / "cache"
    monkeypatch.setenv("KOKORO_RELAY_CACHE", str(directory))
    monkeypatch.setenv("KOKORO_INSTALLED_VOICES", "on")
    monkeypatch.delenv(BASE_URL_ENV, raising=False)
    return directory


def voices(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(["voices", *argv])
    out, err = capsys.readouterr()
    return status, out, err


def listed(out: str) -> dict[str, list[str]]:
    """``voices list``'s rows: name → [language, gender, official, source]."""
    lines = out.splitlines()
    assert lines[0].split() == ["voice", "language", "gender", "official", "source"]
    return {line.split()[0]: line.split()[1:] for line in lines[1:-1]}


def test_nothing_installed_lists_the_embedded_voices(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = voices(capsys, "list")
    assert status == 0
    rows = listed(out)
    assert list(rows) == EMBEDDED
    assert rows["jm_kumo"] == ["ja", "male", "official", "embedded"]
    assert "none installed" in out.splitlines()[-1]
    assert out.splitlines()[-1].endswith("default voice: jf_alpha")


def test_install_the_official_directory(official_voices: Path, cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = voices(capsys, "install", str(official_voices))
    assert (status, err) == (0, "")
    assert "installed af_heart (en-us, female, official)" in out
    assert out.splitlines()[-1].endswith("default voice: af_heart")
    installed = cache / "voices"
    assert sorted(p.stem for p in installed.glob("*.pt")) == sorted(OFFICIAL_SHA256)
    assert (installed / "af_heart.pt").read_bytes() == (official_voices / "af_heart.pt").read_bytes()
    status, out, _ = voices(capsys, "list")
    rows = listed(out)
    assert len(rows) == 54
    assert {row[2] for row in rows.values()} == {"official"}
    assert {row[3] for row in rows.values()} == {"installed"}
    assert rows["bf_emma"] == ["en-gb", "female", "official", "installed"]
    assert rows["zm_yunxi"][:2] == ["zh", "male"]
    assert rows["pf_dora"][0] == "pt-br"
    assert out.splitlines()[-1] == f"54 voices; 54 installed in {installed}; default voice: af_heart"


def test_a_tampered_pack_is_refused_with_one_line_and_nothing_is_installed(
    official_voices: Path, cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "mine"
    source.mkdir()
    shutil.copy(official_voices / "af_heart.pt", source)
    table = read_pt(official_voices / "am_michael.pt").copy()
    table[100, 7] += 1e-3  # a re-saved pack with one value changed: a valid archive, not the official voice
    torch.save(torch.from_numpy(table[:, None, :].copy()), source / "am_michael.pt")
    status, out, err = voices(capsys, "install", str(source))
    assert status == 1
    assert out == ""
    assert len(err.splitlines()) == 1
    assert "am_michael" in err and "SHA-256" in err and "refused" in err and "nothing installed" in err
    assert not (cache / "voices").exists() or list((cache / "voices").iterdir()) == []


def test_unofficial_packs_after_a_shape_check(
    official_voices: Path, cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.copy(official_voices / "af_heart.pt", tmp_path / "xf_custom.pt")
    blend = (read_pt(official_voices / "af_heart.pt") + read_pt(official_voices / "bf_emma.pt")) / 2
    archive = tmp_path / "voices-mine.bin"
    with archive.open("wb") as handle:
        np.savez(handle, af_mix=blend[:, None, :], bf_emma=read_pt(official_voices / "bf_emma.pt")[:, None, :])
    status, out, err = voices(capsys, "install", str(tmp_path / "xf_custom.pt"), str(archive))
    assert (status, err) == (0, "")
    assert "installed af_mix (en-us, female, unofficial)" in out
    assert "installed bf_emma (en-gb, female, official)" in out  # checked by its table's digest
    rows = listed(voices(capsys, "list")[1])
    assert rows["xf_custom"] == ["unknown", "female", "unofficial", "installed"]
    assert rows["af_mix"] == ["en-us", "female", "unofficial", "installed"]
    assert rows["bf_emma"] == ["en-gb", "female", "official", "installed"]
    assert (cache / "voices" / "af_mix.npy").is_file()

    torch.save(torch.zeros(10, 256), tmp_path / "af_short.pt")
    status, out, err = voices(capsys, "install", str(tmp_path / "af_short.pt"))
    assert status == 1
    assert len(err.splitlines()) == 1 and "shape (10, 256)" in err
    assert not (cache / "voices" / "af_short.pt").exists()


def test_fetch_from_the_models_repository(
    official_voices: Path, cache: Path, capsys: pytest.CaptureFixture[str], serve_voices: ServeVoices
) -> None:
    with serve_voices(official_voices) as base_url:
        status, out, err = voices(capsys, "fetch", "af_heart", "jm_kumo", "--base-url", base_url)
        assert (status, err) == (0, "")
        assert "installed af_heart (en-us, female, official)" in out
        assert out.splitlines()[-1].endswith("default voice: af_heart")
        # no names: the English voices, from the variable's URL; what is there already is not fetched again
        with pytest.MonkeyPatch.context() as env:
            env.setenv(BASE_URL_ENV, base_url)
            status, out, err = voices(capsys, "fetch")
        assert (status, err) == (0, "")
        assert "already installed (official): af_heart" in out
    installed = sorted(p.stem for p in (cache / "voices").glob("*.pt"))
    assert installed == sorted([*ENGLISH_VOICES, "jm_kumo"])
    for name in installed:
        assert (cache / "voices" / f"{name}.pt").read_bytes() == (official_voices / f"{name}.pt").read_bytes()


def test_fetch_refuses_a_tampered_download_and_installs_nothing(
    official_voices: Path, cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], serve_voices: ServeVoices
) -> None:
    served = tmp_path / "served"
    shutil.copytree(official_voices, served)
    _tamper(served / "bf_emma.pt")
    with serve_voices(served) as base_url:
        status, out, err = voices(capsys, "fetch", "af_heart", "bf_emma", "--base-url", base_url)
        assert status == 1
        assert out == ""
        assert err.splitlines() == [err.strip()]
        assert f"{base_url}/bf_emma.pt: SHA-256 " in err
        assert f"expected {OFFICIAL_SHA256['bf_emma']}" in err and "refused, nothing installed" in err
        assert not (cache / "voices").exists() or list((cache / "voices").iterdir()) == []

        status, _, err = voices(capsys, "fetch", "xf_nobody", "--base-url", base_url)
        assert status == 1 and "not an official voice: xf_nobody" in err
        status, _, err = voices(capsys, "fetch", "af_nobody_here", "--base-url", f"{base_url}/missing")
        assert status == 1 and "not an official voice" in err
        status, _, err = voices(capsys, "fetch", "af_heart", "--base-url", f"{base_url}/missing")
        assert status == 1 and "cannot download" in err and len(err.splitlines()) == 1


def _tamper(path: Path) -> None:
    """Change one float of the pack's table (the zip stores it uncompressed; the archive stays readable)."""
    data = bytearray(path.read_bytes())
    offset = data.index(b"data/0") + 200
    data[offset] ^= 0x01
    path.write_bytes(bytes(data))
