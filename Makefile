# Developer entry points. `make build` compiles the Rust extension in place (release profile); the test
# profiles and CI steps are described in docs/development.md.
PYTHON ?= python
# pyproject.toml's [build-system] requires: `make build` installs without build isolation (so that the
# editable build reuses ./target), which means nothing else installs them (tests/test_cli_data_in_out.py
# checks the two lists agree).
BUILD_REQUIRES = 'maturin>=1.5,<2'

.PHONY: build test test-full test-deep test-extended test-perf test-python test-python-fallback test-adversarial test-rust test-versions test-abi3 stubtest ci bench bench-index bench-instructions lint long-files fmt clean

build:
	$(PYTHON) -m pip install -q $(BUILD_REQUIRES)
	$(PYTHON) -m pip install -e '.[test]' --no-build-isolation -q

# The default profile (README's test command): every contract, attack class and integration, with a
# quarter of the hypothesis examples and the heaviest probes left to `test-extended` (docs/development.md).
test:
	MEMDEDUP_IMPLEMENTATION=rust $(PYTHON) -m pytest -q

test-python: test

# Everything the default profile leaves out, and nothing it runs: the `slow` tests (child processes, big
# inputs, Dask, symfonic) at their full example count; the pure-Python reference's parity run (the
# fallback's, at the default profile's examples, as the fallback run had); then the other three quarters
# of every default-profile property test's examples, drawn from another seed.
test-extended:
	MEMDEDUP_IMPLEMENTATION=rust MEMDEDUP_HYPOTHESIS_SCALE=1 $(PYTHON) -m pytest -q -m 'slow and not reference' \
		--durations=15
	MEMDEDUP_IMPLEMENTATION=rust $(PYTHON) -m pytest -q -m reference --durations=5
	MEMDEDUP_IMPLEMENTATION=rust MEMDEDUP_HYPOTHESIS_SCALE=0.75 HYPOTHESIS_PROFILE=extra $(PYTHON) -m pytest -q \
		-m 'hypothesis and not slow and not perf' --hypothesis-seed=20240611 --durations=15

# Tests that assert a count standing for time (steps, bytes examined): their own lane.
test-perf:
	MEMDEDUP_IMPLEMENTATION=rust $(PYTHON) -m pytest -q -m perf --durations=10

# The whole suite at the full example count (what the default and extended profiles add up to).
test-full:
	MEMDEDUP_IMPLEMENTATION=rust MEMDEDUP_HYPOTHESIS_SCALE=1 $(PYTHON) -m pytest -q -m ''

# The whole suite with ten times the full example count.
test-deep:
	MEMDEDUP_IMPLEMENTATION=rust MEMDEDUP_HYPOTHESIS_SCALE=10 $(PYTHON) -m pytest -q -m ''

# The pure-Python fallback: the package imports and answers on the reference alone (its parity with the
# contracts is tests/test_parity_core.py's `python` run, in test-extended).
test-python-fallback:
	MEMDEDUP_IMPLEMENTATION=python $(PYTHON) -m pytest -q -m '' tests/test_fallback_smoke.py

# Crash, memory-cap, Ctrl-C and thread probes, each in a child `python -X dev`.
test-adversarial:
	MEMDEDUP_IMPLEMENTATION=rust $(PYTHON) -m pytest -q -m '' tests/adversarial

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
	ruff check python tests benches scripts
	ruff format --check python tests benches scripts
	cargo fmt --check
	cargo clippy --all-targets -- -D warnings
	cargo clippy --all-targets --features python -- -D warnings
	cargo clippy --lib --features abi3 -- -D warnings
	$(PYTHON) -m mypy --strict -p memdedup
	$(PYTHON) -m mypy.stubtest memdedup._core
	$(PYTHON) scripts/long-files.py

# Every source file over 800 lines (a sign to split it by concept); fails when there is one not on the
# script's list of files other work is splitting now.
long-files:
	$(PYTHON) scripts/long-files.py

fmt:
	ruff format python tests benches
	ruff check --fix python tests benches
	cargo fmt

clean:
	rm -rf target build dist python/memdedup/*.so
