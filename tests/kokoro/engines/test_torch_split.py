"""The torch engine split at its decoder (kokoro_server.engines.torch_synth) and decoded in chunks (chunk_plan).

The real Kokoro-82M weights converted from the shipped int8 ONNX, on the CPU. ``KModel``'s source module draws
random initial phases and noise, so every comparison seeds torch's global generator the same way before each
render: the front end draws exactly what ``forward_with_tokens`` draws, in the same order.

The seam and log-mel limits are the ONNX engine's (tests/kokoro/test_streaming_decoder.py, from the corpus
measures of bench/bench_streaming_quality.py); the torch decoder is the same network in fp32, and on these two
texts it measured seam/inside 0.74 and 0.18, log-mel 0.88 and 0.60 nepers (seed 2024).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
import torch

from kokoro_server.engines import Engine
from kokoro_server.engines.chunk_plan import ChunkSchedule, plan_chunks
from kokoro_server.engines.torch_synth import TorchSynthesizer
from kokoro_server.policy import SpeechPolicy
from kokoro_server.scheduled_speech import ScheduledSpeech, speak_offline
from kokoro_server.scheduler import Scheduler, SchedulerSession
from kokoro_server.silence import pcm16_to_float
from kokoro_server.stream_quality import snr_db
from relay_core.speech_options import SpeechOptions

pytestmark = pytest.mark.slow

TEXTS = (
    "The flight to Lisbon is delayed by about forty minutes because of fog at the departure airport.",
    "Your blood pressure readings from this week look stable and are all within the normal range.",
)
SHORT = "Thanks for waiting."
MEDIUM = "The flight to Lisbon is delayed by forty minutes."
VOICE = "jf_alpha"
SEED = 2024


@dataclass(frozen=True)
class _Decodes:
    """One text's first segment decoded whole and streamed, each from the same source (torch seeded with SEED)."""

    whole: npt.NDArray[np.float32]
    whole_durations: tuple[int, ...] | None
    """The whole decode's frames per token (``render_timed``)."""
    chunks: list[npt.NDArray[np.float32]]
    durations: tuple[int, ...]
    frame_samples: int


@pytest.fixture(scope="module")
def decodes(torch_engine: Engine) -> dict[str, _Decodes]:
    """Each of TEXTS decoded whole and streamed once for the module: the bit-for-bit test, the tiling test and the
    seam tests read the same decodes (each decode of a sentence costs seconds of CPU; they are deterministic for a
    seed)."""
    out: dict[str, _Decodes] = {}
    for text in TEXTS:
        segment = torch_engine.plan(text, voice=VOICE, speed=1.0)[0]
        torch.manual_seed(SEED)
        whole = torch_engine.render_timed(segment, voice=VOICE, speed=1.0)
        torch.manual_seed(SEED)
        streamed = torch_engine.render_stream(segment, voice=VOICE, speed=1.0)
        out[text] = _Decodes(
            whole.audio, whole.durations, list(streamed.chunks), tuple(streamed.durations), streamed.frame_samples
        )
    return out


def _synth(engine: Engine) -> TorchSynthesizer:
    synth = engine._synthesizer
    assert isinstance(synth, TorchSynthesizer)
    return synth


def test_front_end_then_decoder_is_forward_with_tokens_bit_for_bit(
    torch_engine: Engine, decodes: dict[str, _Decodes]
) -> None:
    """The split engine's whole-segment audio and durations (``render_timed``, seeded with SEED: the module's
    decode) equal ``KModel.forward_with_tokens``'s exactly."""
    assert torch_engine.streams
    synth = _synth(torch_engine)
    segment = torch_engine.plan(TEXTS[0], voice=VOICE, speed=1.0)[0]
    style = torch_engine._voices.style_for(torch_engine._voices.resolve(VOICE), len(segment.tokens))
    torch.manual_seed(SEED)
    with torch.inference_mode():
        audio, durations = synth.model.forward_with_tokens(
            torch.tensor([[0, *segment.tokens, 0]]),
            torch.from_numpy(np.array(style, dtype=np.float32).reshape(1, -1)),
            1.0,
        )
    split = decodes[TEXTS[0]]
    assert split.whole_durations == tuple(durations.tolist())
    np.testing.assert_array_equal(split.whole, audio.numpy())
    torch.manual_seed(SEED + 1)
    other = torch_engine.render(segment, voice=VOICE, speed=1.0)
    assert not np.array_equal(other, split.whole)  # the seed is what made them equal: the source is random


def test_streamed_chunks_tile_the_segment(decodes: dict[str, _Decodes]) -> None:
    """A small first chunk (leading padding + first_frames), then the rest in one chunk (issue 29); as long as the
    whole decode."""
    streamed = decodes[TEXTS[0]]
    whole = streamed.whole
    chunks = [len(chunk) for chunk in streamed.chunks]
    frames = [size // streamed.frame_samples for size in chunks]
    schedule = ChunkSchedule()
    assert all(size % streamed.frame_samples == 0 for size in chunks)
    assert frames[0] == streamed.durations[0] + schedule.first_frames
    planned = plan_chunks(sum(streamed.durations), lead_frames=streamed.durations[0], schedule=schedule)
    assert schedule.max_chunks is not None and 2 <= len(chunks) == len(planned) <= schedule.max_chunks
    assert sum(chunks) == len(whole) == sum(streamed.durations) * streamed.frame_samples


def test_windows_covering_the_segment_give_the_whole_decode_exactly(torch_engine: Engine) -> None:
    """With margins wider than the segment the first window reaches its end, so the segment is one chunk decoded on
    the whole segment: exactly the whole decode (the crop arithmetic, and nothing else, is checked bit for bit;
    any sentence shows it, so a short one)."""
    synth = _synth(torch_engine)
    segment = torch_engine.plan(SHORT, voice=VOICE, speed=1.0)[0]
    style = torch_engine._voices.style_for(torch_engine._voices.resolve(VOICE), len(segment.tokens))
    front = synth.front_end(segment.tokens, style, 1.0)
    (whole,) = synth.decode_chunks(front, chunked=False)
    default = synth.schedule
    try:
        synth.schedule = ChunkSchedule(margin_frames=10_000, lead_context_frames=None)
        chunks = list(synth.decode_chunks(front))
    finally:
        synth.schedule = default
    assert len(chunks) == 1
    np.testing.assert_array_equal(np.concatenate(chunks), whole)


@pytest.mark.parametrize("text", TEXTS)
def test_streamed_decode_has_no_audible_seam(
    decodes: dict[str, _Decodes], text: str, assert_streams_like_whole: Callable[[Any, list[Any]], None]
) -> None:
    """Streamed vs whole decode of the same front end (same source): the ONNX engine's seam and log-mel limits."""
    assert_streams_like_whole(decodes[text].whole, decodes[text].chunks)


def test_a_segment_goes_out_chunk_by_chunk_as_speak_offline_says(torch_engine: Engine) -> None:
    """With KOKORO_STREAM_DECODER's policy, one torch segment leaves ScheduledSpeech in several pieces that
    together are the offline reference (same seed), and differ from the whole-segment rendering (a sentence of
    about three seconds: three renders of it)."""
    text = MEDIUM
    policy = SpeechPolicy(first_fragment_words=None, stream_decoder=True)

    async def pieces() -> list[bytes]:
        scheduler = Scheduler(workers=1, name="torch-stream", speech=policy)
        try:
            speech = ScheduledSpeech(
                torch_engine, scheduler, SchedulerSession("s"), text=text, options=SpeechOptions(VOICE)
            )
            assert await speech.plan() == 1
            return [pcm async for pcm in speech.pcm_segments()]
        finally:
            scheduler.shutdown()

    torch.manual_seed(SEED)
    got = asyncio.run(pieces())
    assert len(got) >= 3
    torch.manual_seed(SEED)
    reference = speak_offline(torch_engine, text, options=SpeechOptions(VOICE), policy=policy)
    # the same audio: torch's CPU kernels do not promise bit-equal results between the scheduler's worker thread and
    # this one (differences of one bit up to ~250 of 32767 were seen, about -40 dB); a wrong crop, order or chunk
    # puts the pieces out of phase with the reference (SNR near 0 dB)
    streamed, offline = (pcm16_to_float(pcm) for pcm in (b"".join(got), reference))
    assert len(streamed) == len(offline)
    assert snr_db(offline, streamed) > 25
    torch.manual_seed(SEED)
    whole = speak_offline(
        torch_engine,
        text,
        options=SpeechOptions(VOICE),
        policy=SpeechPolicy(first_fragment_words=None, stream_decoder=False),
    )
    assert whole != reference
