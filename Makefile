# One entry point for people and CI. Every target creates .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Two targets started at once (`make fake-llm & make run`) build .venv one after the other:
# the second waits for the lock, then finds the stamp fresh and installs nothing.
LOCKED := $(PYTHON) -c 'import fcntl, subprocess, sys; lock = open(".venv.lock", "w"); \
	fcntl.flock(lock, fcntl.LOCK_EX); sys.exit(subprocess.call(sys.argv[1:]))'

.PHONY: run chat test lint typecheck check bench fake-llm docs clean

$(STAMP): pyproject.toml
	@$(LOCKED) sh -c 'if [ -f $(STAMP) ] && [ $(STAMP) -nt pyproject.toml ]; then exit 0; fi; \
	  set -e; test -x $(BIN)/python || $(PYTHON) -m venv $(VENV); \
	  echo "installing into $(VENV) (first run only)"; \
	  $(BIN)/python -m pip install --quiet --upgrade pip; \
	  $(BIN)/python -m pip install --quiet -e ".[dev]"; \
	  touch $(STAMP)'

## run: start the bot (platform adapters from config.yaml, else the console chat)
run: $(STAMP)
	$(BIN)/python -m bot

## chat: the console chat
chat: $(STAMP)
	$(BIN)/python -m bot chat

# The end-to-end suites run a second time on PostgreSQL when PARLOUR_TEST_PG_URL names a server
# (.ci/run sets it); the conformance suite covers both backends in the first run.
E2E_SUITES := tests/product/conversation tests/product/telegram tests/product/discord \
	tests/product/memory tests/product/plugins tests/product/guardrails tests/product/llm

# Tests run in parallel (pytest-xdist): every fake binds a free port, every test has its own
# tmp_path and PostgreSQL schema. Most of a test's time is waiting on loopback I/O, so there are
# more workers than cores. `make test TEST_JOBS=0` runs in one process; so does a plain
# `python -m pytest path::test`.
TEST_JOBS ?= 4
PARALLEL := -n $(TEST_JOBS) --dist worksteal

# Each worker imports the ~560 project and test modules: compiled once and kept (__pycache__,
# pytest's rewritten asserts), not again in every worker on every run, even where the
# environment sets PYTHONDONTWRITEBYTECODE.
test: export PYTHONDONTWRITEBYTECODE =

## test: the whole test suite (end-to-end suites on PostgreSQL too when PARLOUR_TEST_PG_URL is set)
# Each run appends its counts to a tally; the last line of `make test` sums every run (skips
# included), and its exit status is the first failing run's.
test: $(STAMP)
	@tally=$$(mktemp); export PARLOUR_TEST_TALLY=$$tally; status=0; \
	$(BIN)/python -m pytest $(PARALLEL) --durations=25 || status=$$?; \
	if [ "$$status" -eq 0 ] && [ -n "$$PARLOUR_TEST_PG_URL" ]; then \
	  echo "end-to-end suites again, on PostgreSQL (PARLOUR_TEST_PG_URL)"; \
	  PARLOUR_TEST_STORAGE=postgres $(BIN)/python -m pytest $(PARALLEL) -m "not slow" $(E2E_SUITES) || status=$$?; \
	elif [ -z "$$PARLOUR_TEST_PG_URL" ]; then \
	  echo "end-to-end suites on PostgreSQL skipped: set PARLOUR_TEST_PG_URL=postgresql://postgres@127.0.0.1:5432/test"; fi; \
	$(BIN)/python -m tests.summary $$tally; rm -f $$tally; exit $$status

## lint: format check, ruff and mypy
lint: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy

check: lint test

## bench: performance table (copy into docs/performance.md)
bench: $(STAMP)
	$(BIN)/python -m bench

## fake-llm: the test kit's fake OpenAI-compatible server on 127.0.0.1:8765 (ARGS=--reveal: show each request)
fake-llm: $(STAMP)
	$(BIN)/python -m bot.testing.fake_llm --port 8765 $(ARGS)

## docs: regenerate docs/configuration-reference.md from the config models
docs: $(STAMP)
	$(BIN)/python -m bot.config.reference

clean:
	rm -rf $(VENV) .venv.lock .mypy_cache .pytest_cache .ruff_cache .hypothesis
