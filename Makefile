# `make book` and `make test` each set up .venv from requirements.txt on first use, and reuse it until
# requirements.txt or pyproject.toml change.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
REQ_HASH := $(shell cat requirements.txt pyproject.toml | sha256sum | cut -c1-16)
STAMP := $(VENV)/.installed-$(REQ_HASH)

.PHONY: book test venv audit clean

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

book: $(STAMP)
	$(BIN)/jupyter-book build .

test: $(STAMP)
	$(BIN)/pytest

audit: $(STAMP)
	$(BIN)/python -m proofkit audit

clean:
	rm -rf _build
