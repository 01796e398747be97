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

demo: $(VENV)/.installed
	$(VENV)/bin/rcjudge synth --n 4 --out $(OUT)/bundles --seed 0
	@for b in $(OUT)/bundles/*/; do $(VENV)/bin/rcjudge inspect $$b || exit 1; done

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .

test: lint
	$(VENV)/bin/pytest -q

bench: $(VENV)/.installed
	$(PY) -m bench.frames
	$(PY) -m bench.intake

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache .ruff_cache
