# Two commands set up a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip --disable-pip-version-check -q
OUT    ?= demo-out

.PHONY: demo test lint bench clean

$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -e .
	touch $@

$(VENV)/.installed-dev: $(VENV)/.installed pyproject.toml
	$(PIP) install -e '.[dev]'
	touch $@

MODELS ?= data/models
export RCJUDGE_MODELS := $(MODELS)

$(MODELS)/tiny/llava/config.json: | $(VENV)/.installed
	$(VENV)/bin/rcjudge models build-tiny --out $(MODELS)/tiny

demo: $(VENV)/.installed $(MODELS)/tiny/llava/config.json
	$(VENV)/bin/rcjudge synth --n 6 --out $(OUT)/bundles --seed 0
	$(VENV)/bin/rcjudge inspect $(OUT)/bundles/synth-0000-0000
	@echo "tiny judge: three random-weight VLMs on CPU; verdicts show the plumbing, not truth"
	$(VENV)/bin/rcjudge judge $(OUT)/bundles/*/ --judge tiny

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .

test: lint
	$(VENV)/bin/pytest -q

bench: $(VENV)/.installed
	$(PY) -m bench.frames
	$(PY) -m bench.intake

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache .ruff_cache
