# Developer entry points. `make build` compiles the Rust extension in place (release profile).
PYTHON ?= python

.PHONY: build test test-python test-rust test-versions bench bench-instructions lint fmt clean

build:
	$(PYTHON) -m pip install -e '.[test]' --no-build-isolation -q

test: test-rust test-python

test-python:
	$(PYTHON) -m pytest -q

test-rust:
	cargo test --lib

# The difflib suites against a build for every other CPython 3.12+ on this machine (CI runs it too).
test-versions:
	bash scripts/test-other-pythons.sh

bench:
	$(PYTHON) benches/bench_core.py

# Instructions per call under callgrind (needs valgrind): the noise-free view of bench_core.
bench-instructions:
	$(PYTHON) benches/bench_instructions.py

# The extension must be built in the tree (`make build`) for the last step: the stubs of
# memdedup._core are checked against it.
lint:
	ruff check python tests benches
	ruff format --check python tests benches
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings
	cargo clippy --all-targets --features python -- -D warnings
	cargo clippy --lib --features abi3 -- -D warnings
	PYTHONPATH=python $(PYTHON) -m mypy.stubtest memdedup._core

fmt:
	ruff format python tests benches
	ruff check --fix python tests benches
	cargo fmt

clean:
	rm -rf target build dist python/memdedup/*.so
