# Every target creates its own virtual environment, so both commands work on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
EXTRAS ?= test,chem,plot,distributed

.PHONY: demo test venv bench fuzz properties clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

venv: $(BIN)/activate
	$(BIN)/pip install --quiet -e ".[$(EXTRAS)]"

demo: venv
	$(BIN)/iokr demo --output results/demo --overwrite

# The lint runs first: a ruff finding fails the target before the (longer) test suite starts.
test: venv
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q tests

# Longer hardening campaigns (the CI runs the same tests with the small derandomized "ci" profile): rounds of the
# randomized "long" profile of tests/fuzz until FUZZ_INPUTS inputs were tried; summary in reports/fuzz.json.
FUZZ_INPUTS ?= 100000

fuzz: venv
	$(BIN)/python tests/fuzz/campaign.py --min-inputs $(FUZZ_INPUTS) --output reports/fuzz.json

properties: venv
	IOKR_HYPOTHESIS_PROFILE=long $(BIN)/python -m pytest -q tests/properties

bench: venv
	$(BIN)/python -m benchmarks.run --output benchmarks/results

clean:
	rm -rf $(VENV) results
