# `make book` and `make test` each set up .venv from requirements.txt on first use, and reuse it until
# requirements.txt or pyproject.toml change.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
REQ_HASH := $(shell cat requirements.txt pyproject.toml | sha256sum | cut -c1-16)
STAMP := $(VENV)/.installed-$(REQ_HASH)

.PHONY: book test test-portable browser-test venv audit clean

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

# The notebook suite as if on other x86-64 processors: numpy's dispatch, PyTorch's ATen kernels, MKL, oneDNN and
# OpenBLAS held to AVX2 without AVX-512 (x86-64-v3), then to SSE4.2 (x86-64-v2). tests/isa.py fails a run whose
# profile did not take effect. Run it on a machine with AVX2 or more; ONNX Runtime's kernels cannot be emulated.
ISA_x86-64-v3 := NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR" ATEN_CPU_CAPABILITY=avx2 \
	MKL_ENABLE_INSTRUCTIONS=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 OPENBLAS_CORETYPE=Haswell
ISA_x86-64-v2 := NPY_DISABLE_CPU_FEATURES="X86_V3 X86_V4 AVX512_ICL AVX512_SPR" ATEN_CPU_CAPABILITY=default \
	MKL_ENABLE_INSTRUCTIONS=SSE4_2 ONEDNN_MAX_CPU_ISA=SSE41 OPENBLAS_CORETYPE=Nehalem
PROFILES ?= x86-64-v3 x86-64-v2

test-portable: $(STAMP)
	$(BIN)/python tests/isa.py
	@set -e; for p in $(PROFILES); do \
	  case $$p in x86-64-v3) env='$(ISA_x86-64-v3)';; x86-64-v2) env='$(ISA_x86-64-v2)';; *) echo "unknown profile $$p"; exit 2;; esac; \
	  echo "== notebooks under $$p: $$env"; \
	  eval "$$env $(BIN)/python tests/isa.py $$p"; \
	  eval "$$env $(BIN)/pytest proofs book -p no:cacheprovider"; \
	done

# the built site in headless Chromium (needs Debian's chromium and chromium-driver; run after `make book`)
browser-test: $(STAMP)
	$(BIN)/pytest tests_browser -o addopts="" -p no:cacheprovider

audit: $(STAMP)
	$(BIN)/python -m proofkit audit

clean:
	rm -rf _build
