# One entry point for people and CI. Every target creates .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: run chat test lint typecheck check bench fake-llm clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

## run: start the bot (platform adapters from config.yaml, else the console chat)
run: $(STAMP)
	$(BIN)/python -m bot

## chat: the console chat
chat: $(STAMP)
	$(BIN)/python -m bot chat

## test: the whole test suite
test: $(STAMP)
	$(BIN)/python -m pytest

## lint: format check, ruff and mypy
lint: $(STAMP)
	$(BIN)/ruff format --check .
	$(BIN)/ruff check .
	$(BIN)/mypy

check: lint test

## bench: performance table (copy into README's Performance section)
bench: $(STAMP)
	$(BIN)/python -m bench

## fake-llm: the test kit's fake OpenAI-compatible server on 127.0.0.1:8765
fake-llm: $(STAMP)
	$(BIN)/python -m bot.testing.fake_llm --port 8765

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache .hypothesis
