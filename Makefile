# make demo   set up .venv (if needed) and run the demo on the embedded defaults
# make test   set up .venv (if needed) and run the whole test suite
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-nightly bench clean

setup: $(STAMP)

# torch==2.13.0 first: pip takes the local CPU wheel; any other pin or range may pull a CUDA build.
$(STAMP): pyproject.toml setup.py $(wildcard tunegate/native/*.c) tunegate/native/_loops.h tunegate/native/fold_table.py
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[all]'
	# Bytecode for the source tree, as an installed package has: where PYTHONDONTWRITEBYTECODE is set,
	# every `python -m tunegate` (the CLI tests start hundreds) would compile each module again.
	$(BIN)/python -m compileall -q tunegate
	touch $(STAMP)

demo: setup
	$(BIN)/python examples/demo.py

# Two workers, one per core; --dist loadscope keeps each module (and its one server) on one worker.
test: setup
	$(BIN)/python -m pytest -q -m "not nightly" -n 2 --dist loadscope

test-nightly: setup
	$(BIN)/python -m pytest -q -m nightly

bench: setup
	$(BIN)/python benchmarks/static_throughput.py

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis
