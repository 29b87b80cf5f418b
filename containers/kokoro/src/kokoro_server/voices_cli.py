"""``kokoro-server voices list | install PATH... | fetch [NAMES|--all]``: the voice packs in the cache.

- ``list``: every voice the server would load (the embedded Japanese packs, then the installed ones), with its
  language, gender, whether it is official (its table matches the pinned SHA-256) and where it comes from, then the
  default voice.
- ``install PATH...``: copy packs into the cache (``$KOKORO_RELAY_CACHE/voices``, or ``--cache-dir``/voices): a
  directory of ``<name>.pt`` (the model repository's layout), one ``.pt``, kokoro-onnx's ``voices-v1.0.bin`` or
  any ``.npz`` of name → ``[510, 1, 256]``. Every pack is read and checked before anything is written: an official
  name whose table is not the pinned one is refused (one line, exit 1, nothing installed); any other name is
  installed after the shape check, as an unofficial voice.
- ``fetch [NAMES...] [--all]``: download official packs from the model's repository (``--base-url``, or
  ``$KOKORO_VOICES_URL``, default :data:`DEFAULT_BASE_URL`), each checked against its pinned SHA-256 before any is
  installed; with no names, the official English voices (af_heart among them).

Light: numpy and the standard library (no onnxruntime, no uvicorn, no torch).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from kokoro_server.engines.errors import ModelFilesError
from kokoro_server.engines.model_files import (
    default_cache_dir,
    default_voices_path,
    installed_voices_dir,
    installed_voices_enabled,
)
from kokoro_server.engines.voice_packs import (
    ENGLISH_VOICES,
    NAME_PATTERN,
    OFFICIAL_SHA256,
    FloatArray,
    check_official,
    check_official_file,
    default_voice_of,
    describe,
    installed_packs,
    read_archive,
    read_npy,
    read_pt,
    sha256_hex,
)
from relay_core.cli_usage import UsageParser

PROG = "kokoro-server voices"
FAILED = 1
DEFAULT_BASE_URL = "https://huggingface.co/hexgrad/Kokoro-82M/resolve/main/voices"
"""Where the official packs are published: ``<base>/<name>.pt``."""
BASE_URL_ENV = "KOKORO_VOICES_URL"
DOWNLOAD_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class Pack:
    """One pack about to be installed: its table, and the ``.pt`` file's bytes when it came as one (copied as is)."""

    name: str
    table: FloatArray
    source: str
    pt_bytes: bytes | None = None


def build_parser() -> argparse.ArgumentParser:
    parser = UsageParser(
        prog=PROG,
        description="Kokoro voice packs: list the voices, install packs you have, or fetch the official ones.",
    )
    parser.add_argument(
        "--cache-dir",
        type=Path,
        default=None,
        help="the cache (default $KOKORO_RELAY_CACHE or ~/.cache/kokoro-relay); packs go in its voices/",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{list,install,fetch}")
    commands.add_parser("list", help="each voice: language, gender, official or not, embedded or installed")
    install = commands.add_parser("install", help="copy voice packs into the cache (checked first)")
    install.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="a directory of .pt, a .pt, .npz or .bin")
    fetch = commands.add_parser("fetch", help="download official packs from the model's repository (checked)")
    fetch.add_argument("names", nargs="*", metavar="NAME", help="official voice names (default: the English ones)")
    fetch.add_argument("--all", action="store_true", help="all 54 official packs")
    fetch.add_argument(
        "--base-url",
        default=None,
        help=f"where <name>.pt is fetched from (default ${BASE_URL_ENV} or {DEFAULT_BASE_URL})",
    )
    return parser


# --------------------------------------------------------------------------------------------------------------
# install
# --------------------------------------------------------------------------------------------------------------


def _checked_name(name: str, source: Path | str) -> str:
    if NAME_PATTERN.fullmatch(name) is None:
        raise ModelFilesError(f"{source}: {name!r} is not a voice name (letters, digits, _ . -): rename the pack")
    return name


def packs_at(path: Path) -> list[Pack]:
    """The packs a path holds (a directory of ``.pt``/``.npy``, one pack, or an archive), each read and checked."""
    if not path.exists():
        raise ModelFilesError(f"{path} does not exist")
    if path.is_dir():
        files = sorted([*path.glob("*.pt"), *path.glob("*.npy")])
        if not files:
            raise ModelFilesError(f"no voice packs (*.pt) in {path}: point at the model's voices/ directory")
        return [pack for file in files for pack in packs_at(file)]
    if path.suffix == ".pt":
        name = _checked_name(path.stem, path)
        return [Pack(name, read_pt(path), str(path), path.read_bytes())]
    if path.suffix == ".npy":
        return [Pack(_checked_name(path.stem, path), read_npy(path), str(path))]
    return [Pack(_checked_name(name, path), table, f"{path}:{name}") for name, table in read_archive(path).items()]


def _write_atomically(target: Path, write: bytes | npt.NDArray[np.float32]) -> None:
    with tempfile.NamedTemporaryFile(dir=target.parent, prefix=f".{target.name}-", delete=False) as handle:
        temp = Path(handle.name)
        try:
            if isinstance(write, bytes):
                handle.write(write)
            else:
                np.save(handle, write, allow_pickle=False)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
    temp.chmod(0o644)
    os.replace(temp, target)


def install_packs(packs: Sequence[Pack], directory: Path) -> list[Path]:
    """Check every pack (official names against the pinned digest), then write them all into ``directory``: a
    ``.pt`` byte for byte as ``<name>.pt``, a pack from an archive as ``<name>.npy``. Nothing is written when
    any pack is refused."""
    for pack in packs:
        try:
            check_official(pack.name, pack.table, pack.source)
        except ModelFilesError as exc:
            raise ModelFilesError(f"{exc}, nothing installed") from None
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for pack in {pack.name: pack for pack in packs}.values():
        if pack.pt_bytes is not None:
            target, other = directory / f"{pack.name}.pt", directory / f"{pack.name}.npy"
            _write_atomically(target, pack.pt_bytes)
        else:
            target, other = directory / f"{pack.name}.npy", directory / f"{pack.name}.pt"
            _write_atomically(target, np.ascontiguousarray(pack.table[:, None, :], dtype="<f4"))
        other.unlink(missing_ok=True)
        written.append(target)
    return written


def _report_installed(packs: Sequence[Pack], directory: Path) -> None:
    for pack in {pack.name: pack for pack in packs}.values():
        facts = describe(pack.name, pack.table, "installed")
        print(
            f"installed {pack.name} ({facts.language}, {facts.gender}, "
            f"{'official' if facts.official else 'unofficial'}) from {pack.source}"
        )
    print(f"{len({pack.name for pack in packs})} voice(s) installed in {directory}; {_default_line(directory)}")


def run_install(paths: Sequence[Path], directory: Path) -> int:
    packs = [pack for path in paths for pack in packs_at(path)]
    install_packs(packs, directory)
    _report_installed(packs, directory)
    return 0


# --------------------------------------------------------------------------------------------------------------
# fetch
# --------------------------------------------------------------------------------------------------------------


def fetch_names(names: Sequence[str], *, every: bool) -> list[str]:
    """The official names to fetch: ``names``, all of them with ``every``, else the English ones."""
    if every:
        return sorted(OFFICIAL_SHA256)
    if not names:
        return list(ENGLISH_VOICES)
    unknown = [name for name in names if name not in OFFICIAL_SHA256]
    if unknown:
        raise ModelFilesError(
            f"not an official voice: {', '.join(unknown)} (fetch takes the 54 official names; "
            f"'{PROG} install PATH' takes your own packs)"
        )
    return list(dict.fromkeys(names))


def default_base_url() -> str:
    """Where official packs are fetched from: ``$KOKORO_VOICES_URL``, else the model's repository."""
    return os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL


def download(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_S) as response:  # noqa: S310 - http(s) only
            data: bytes = response.read()
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise ModelFilesError(f"cannot download {url} ({reason}): nothing installed") from exc
    return data


def run_fetch(names: Sequence[str], directory: Path, base_url: str) -> int:
    if not base_url.startswith(("http://", "https://")):
        raise ModelFilesError(f"base URL {base_url!r} is not http(s)://: set --base-url or ${BASE_URL_ENV}")
    packs: list[Pack] = []
    kept: list[str] = []
    for name in names:
        present = directory / f"{name}.pt"
        if present.is_file() and sha256_hex(present.read_bytes()) == OFFICIAL_SHA256[name]:
            kept.append(name)
            continue
        url = f"{base_url.rstrip('/')}/{name}.pt"
        data = download(url)
        check_official_file(name, data, url)
        with tempfile.TemporaryDirectory() as scratch:
            file = Path(scratch) / f"{name}.pt"
            file.write_bytes(data)
            packs.append(Pack(name, read_pt(file), url, data))
    install_packs(packs, directory)
    if kept:
        print(f"already installed (official): {', '.join(kept)}")
    _report_installed(packs, directory)
    return 0


# --------------------------------------------------------------------------------------------------------------
# list
# --------------------------------------------------------------------------------------------------------------


def voices_in_order(directory: Path) -> list[tuple[str, FloatArray, str]]:
    """(name, table, ``embedded``/``installed``) for each voice the server loads by default, sorted by name; an
    installed pack replaces an embedded one of the same name."""
    voices: dict[str, tuple[FloatArray, str]] = {
        name: (table, "embedded") for name, table in read_archive(default_voices_path()).items()
    }
    for name, table in installed_packs(directory).items():
        voices[name] = (table, "installed")
    return [(name, table, source) for name, (table, source) in sorted(voices.items())]


def _default_line(directory: Path, rows: Sequence[tuple[str, FloatArray, str]] | None = None) -> str:
    """The voice that speaks when a request names none (the server's rule, :func:`default_voice_of`)."""
    loaded = [
        name
        for name, _, source in (voices_in_order(directory) if rows is None else rows)
        if source == "embedded" or installed_voices_enabled()
    ]
    return f"default voice: {default_voice_of(loaded)}"


def run_list(directory: Path) -> int:
    rows = voices_in_order(directory)
    print(f"{'voice':<16} {'language':<9} {'gender':<8} {'official':<11} source")
    for name, table, source in rows:
        facts = describe(name, table, source)
        official = "official" if facts.official else "unofficial"
        print(f"{name:<16} {facts.language:<9} {facts.gender:<8} {official:<11} {source}")
    installed = sum(1 for _, _, source in rows if source == "installed")
    if installed:
        where = f"{installed} installed in {directory}"
        if not installed_voices_enabled():
            where += " (not loaded: KOKORO_INSTALLED_VOICES=off)"
    else:
        where = f"none installed in {directory} ('{PROG} fetch' gets the official English voices)"
    print(f"{len(rows)} voices; {where}; {_default_line(directory, rows)}")
    return 0


def main(argv: Sequence[str]) -> int:
    """``kokoro-server voices ...``: 0 on success; 1 with one line on stderr when a pack is refused or missing."""
    args = build_parser().parse_args(list(argv))
    directory = installed_voices_dir(args.cache_dir or default_cache_dir())
    try:
        if args.command == "list":
            return run_list(directory)
        if args.command == "install":
            return run_install(args.paths, directory)
        base_url = args.base_url or default_base_url()
        return run_fetch(fetch_names(args.names, every=args.all), directory, base_url)
    except ModelFilesError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return FAILED
