#!/usr/bin/env bash
# Torch engine on CUDA: set up, convert the weights, run bench_torch_gpu.py (fp32, bf16, fp16).
# Usage: bash bench/gpu.sh            (GPU machine: TTFA at 1 session, audio s/s at 1, 8, 32, 64 sessions,
#                                      and streaming within a segment on vs off through the torch engine)
#        bash bench/gpu.sh --smoke    (CPU, small numbers: verifies the script end to end)
# Extra arguments are passed to bench/bench_torch_gpu.py. Works offline from the locked environment.
set -euo pipefail
cd "$(dirname "$0")/.."
export UV_PYTHON_DOWNLOADS=never
if command -v uv >/dev/null 2>&1; then
  uv sync --all-groups --frozen >/dev/null
  PY=(uv run --frozen python)
else
  PY=(python3)
fi
"${PY[@]}" -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())"
"${PY[@]}" -m kokoro_server.convert.cli   # converts once into $KOKORO_RELAY_CACHE (or ~/.cache/kokoro-relay)
cd bench
exec "${PY[@]}" bench_torch_gpu.py "$@"
