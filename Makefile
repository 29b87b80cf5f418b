# Kokoro Relay — the two commands a newcomer needs: `make demo` and `make test`.
# Both install everything they need (uv included) on a fresh machine; nothing is downloaded at run time
# except packages from PyPI. uv never downloads an interpreter: Python 3.12 comes from the machine (pyenv).

SHELL := /bin/bash
export UV_PYTHON_DOWNLOADS := never
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
export PYENV_VERSION := $(shell cat .python-version 2>/dev/null | head -n 1)
# Python keeps its bytecode caches (__pycache__, ignored by git). An environment that sets PYTHONDONTWRITEBYTECODE
# (this machine's does) makes every Python process compile every module it imports from source, every time: measured
# here, 27 s of CPU to collect the suite (13 s with the caches) and 2.7 s to import the agent (0.9 s), paid by each
# xdist worker and by every console command, agent and stack the tests start as a process.
unexport PYTHONDONTWRITEBYTECODE
UV := python3 -m uv
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
DEMO_TEXT ?= Hello! I am your voice agent, and I start speaking while I am still writing. Every sentence goes to Kokoro the moment it is complete. The rest of the reply follows, one sentence after another. Thanks for listening.

.PHONY: setup demo up preflight synth deploy destroy cdk-cli bench-gateway bench-sagemaker bench-intelligibility test check lint typecheck unit browser web-test web-typecheck bench bench-ttfa bench-concurrency bench-server bench-agent bench-llm bench-torch clean

setup:
	@python3 -m uv --version >/dev/null 2>&1 || python3 -m pip install --quiet --disable-pip-version-check uv
	@$(UV) sync --locked --all-packages

# The whole path: TTS container, agent, moto, local API Gateway + the real functions; a client with a dev token.
demo: setup
	@mkdir -p out
	$(UV) run relay chat --local "$(DEMO_TEXT)" --out out/demo.wav

# Keep the local stack running (web client, gateway, functions, agent, TTS) until Ctrl-C.
# UP_ARGS: more options for relay up, e.g. UP_ARGS="--web-port 0 --gateway-port 0 --aws-port 0".
# UP_MODEL: smollm2 (a real 135M LLM on CPU, through the local Bedrock stand-in) or speak (the echo model, no LLM).
UP_ARGS ?=
UP_MODEL ?= smollm2
up: setup
	$(UV) run relay up --model $(UP_MODEL) $(UP_ARGS)

# ---- AWS deployment (relay_infra; docs/deploy.md). The CDK CLI is pinned in infra/package-lock.json. ----
CDK := cd infra && CDK_DISABLE_CLI_TELEMETRY=true npx --no-install cdk
CDK_CONTEXT ?=

cdk-cli:
	@cd infra && npm ci --no-audit --no-fund --loglevel=error

# Read-only checks of the target account (credentials, CDK bootstrap, quota, Bedrock model, inference AMI, Docker,
# cost per hour) with the config make deploy would use; exits 1 with each failing check's fix (docs/deploy.md).
preflight: setup
	$(UV) run relay deploy preflight $(CDK_CONTEXT)

synth: setup cdk-cli
	$(CDK) synth --quiet --no-notices $(CDK_CONTEXT)

deploy: setup cdk-cli
	$(CDK) deploy "KokoroRelay-*-SpeechData" --require-approval never --no-notices $(CDK_CONTEXT)
	$(UV) run python -m relay_infra.upload_weights $(CDK_CONTEXT)
	$(CDK) deploy --all --require-approval never --no-notices -c relay:deploymentId=$$(date -u +%Y%m%dT%H%M%SZ) $(CDK_CONTEXT)

destroy: setup cdk-cli
	$(CDK) destroy --all --force --no-notices $(CDK_CONTEXT)

lint: setup
	$(UV) run ruff check .
	$(UV) run ruff format --check .

typecheck: setup
	$(UV) run mypy core/src transport/src containers/kokoro/src containers/agent/src local/src cli/src functions/src infra/src tests bench

# Two workers; tests that share process-wide AWS state run on one of them, in order (tests/conftest.py worker_group).
PYTEST_WORKERS ?= 2

unit: setup
	$(UV) run pytest -n $(PYTEST_WORKERS) --durations=10

test: lint typecheck web-typecheck web-test browser unit

# The quick check for every edit (under two minutes on two cores): ruff format and lint, and mypy, on the Python files
# changed against HEAD (untracked ones too; everything when none changed), then the tests that need no model, browser
# or other process (RELAY_TESTS_QUICK: tests/conftest.py leaves out those marked slow, model, browser or processes).
CHANGED_PY = $(shell { git diff --name-only --diff-filter=d HEAD; git ls-files --others --exclude-standard; } 2>/dev/null | grep '\.py$$' | sort -u)

check: setup
ifeq ($(strip $(CHANGED_PY)),)
	@echo "check: no Python file changed since HEAD; checking them all"
	@$(MAKE) --no-print-directory lint typecheck
else
	$(UV) run ruff format --check $(CHANGED_PY)
	$(UV) run ruff check $(CHANGED_PY)
	$(UV) run mypy $(CHANGED_PY)
endif
	RELAY_TESTS_QUICK=1 $(UV) run pytest -n $(PYTEST_WORKERS) -q -p no:cacheprovider --durations=10

# The web client and @kokoro-relay/client (clients/js): Node's built-in test runner (no build step; the one npm
# package is the client's optional Opus decoder, opus-decoder, pinned in clients/js/package-lock.json);
# their tests against the live stack run in pytest (tests/web/test_client_node.py).
web-test:
	@command -v node >/dev/null || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq nodejs >/dev/null; }
	@npm --prefix clients/js ci --no-audit --no-fund --loglevel=error
	node --test tests/web/

# Types: tsc --checkJs (strict) over web/*.js and clients/js (no DOM lib); TypeScript and axe-core pinned in web/package-lock.json.
web-typecheck:
	@npm --prefix web ci --no-audit --no-fund --loglevel=error
	npm --prefix web run --silent typecheck

# Debian's Chromium for the Playwright browser tests (Playwright never downloads a browser here).
browser:
	@test -x /usr/bin/chromium || { $(SUDO) apt-get update -qq && $(SUDO) apt-get install -y -qq chromium >/dev/null; }

bench-ttfa: setup
	$(UV) run python bench/bench_ttfa.py

bench-concurrency: setup
	$(UV) run python bench/bench_concurrency.py

bench-server: setup
	$(UV) run python bench/bench_server.py

bench-agent: setup
	$(UV) run python bench/bench_agent_ttfa.py

bench-llm: setup
	$(UV) run python bench/bench_local_llm.py

# Whisper WER with every first-sound policy on vs off, and word-timing agreement with Whisper (docs/benchmarks.md §9).
bench-intelligibility: setup
	$(UV) run python bench/bench_intelligibility.py

bench-gateway: setup
	$(UV) run python bench/bench_gateway.py

bench-sagemaker: setup
	$(UV) run python bench/bench_sagemaker_frontend.py

bench-torch: setup
	$(UV) run python bench/bench_torch_vs_onnx.py

bench: bench-ttfa bench-concurrency bench-server bench-agent bench-torch

clean:
	rm -rf out .pytest_cache .mypy_cache .ruff_cache .hypothesis
