# Developer entry points. `make build` compiles the Rust extension in place (release profile).
PYTHON ?= python
# pyproject.toml's [build-system] requires: `make build` installs without build isolation (so that the
# editable build reuses ./target), which means nothing else installs them (tests/test_cli_data_in_out.py
# checks the two lists agree).
BUILD_REQUIRES = 'maturin>=1.5,<2'

.PHONY: build test test-python test-python-fallback test-adversarial test-rust test-versions test-abi3 stubtest ci bench bench-index bench-instructions lint fmt clean

build:
	$(PYTHON) -m pip install -q $(BUILD_REQUIRES)
	$(PYTHON) -m pip install -e '.[test]' --no-build-isolation -q

test: test-rust test-python

# As CI runs it (README's test command): the Rust backend or an error, never the fallback.
test-python:
	MEMDEDUP_IMPLEMENTATION=rust $(PYTHON) -m pytest -q

# The pure-Python fallback, on a subset (CI runs it too).
test-python-fallback:
	MEMDEDUP_IMPLEMENTATION=python MEMDEDUP_HYPOTHESIS_SCALE=0.2 $(PYTHON) -m pytest -q tests/test_parity_core.py \
		tests/test_batch.py tests/test_difflib.py tests/test_dedup_integration.py

# Crash, memory-cap, Ctrl-C and thread probes, each in a child `python -X dev`.
test-adversarial:
	MEMDEDUP_IMPLEMENTATION=rust $(PYTHON) -m pytest -q tests/adversarial

test-rust:
	cargo test --lib

# The difflib suites against a build for every other CPython 3.11+ on this machine (CI runs it too).
test-versions:
	bash scripts/test-other-pythons.sh

# The abi3 wheel, built and tested in a venv of its own (CI runs it too).
test-abi3:
	bash scripts/test-abi3.sh

stubtest:
	$(PYTHON) -m mypy.stubtest memdedup._core

ci:
	bash .ci/run

bench:
	$(PYTHON) benches/bench_core.py

# The exact candidate index as it grows to the whole corpus, beside the seed's prefix gate (issue 26).
bench-index:
	$(PYTHON) benches/bench_index.py

# Instructions per call under callgrind (needs valgrind): the noise-free view of bench_core.
bench-instructions:
	$(PYTHON) benches/bench_instructions.py

# docs/cli-reference.md must be the parser's --help (`python scripts/cli_reference.py --write` regenerates it).
# mypy --strict types the package as it is importable; the last step checks the stubs of memdedup._core against the installed extension (`make build`
# in a checkout, `pip install .` in CI).
lint:
	$(PYTHON) scripts/cli_reference.py --check
	ruff check python tests benches
	ruff format --check python tests benches
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings
	cargo clippy --all-targets --features python -- -D warnings
	cargo clippy --lib --features abi3 -- -D warnings
	$(PYTHON) -m mypy --strict -p memdedup
	$(PYTHON) -m mypy.stubtest memdedup._core

fmt:
	ruff format python tests benches
	ruff check --fix python tests benches
	cargo fmt

clean:
	rm -rf target build dist python/memdedup/*.so
