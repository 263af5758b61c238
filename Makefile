# `make book` and `make test` each set up .venv from requirements.txt on first use, and reuse it until
# requirements.txt or pyproject.toml change.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
REQ_HASH := $(shell cat requirements.txt pyproject.toml | sha256sum | cut -c1-16)
STAMP := $(VENV)/.installed-$(REQ_HASH)

.PHONY: book test browser-test venv audit clean

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

book: $(STAMP)
	$(BIN)/jupyter-book build . -W -n --keep-going

test: $(STAMP)
	$(BIN)/pytest

# the built site in headless Chromium (needs Debian's chromium and chromium-driver; run after `make book`)
browser-test: $(STAMP)
	$(BIN)/pytest tests_browser -o addopts="" -p no:cacheprovider

audit: $(STAMP)
	$(BIN)/python -m proofkit audit

clean:
	rm -rf _build
