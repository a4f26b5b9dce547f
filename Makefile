.PHONY: run test test-all setup docker bench

# Set up and run rmqtwin on its embedded default (namesrv 9876, broker 10911, ./rmqtwin-store).
run:
	bash scripts/run.sh

# Set up and pass the test suite CI runs (ruff, mypy, pytest without the exhaustive `slow` variants),
# the real-Java-client scenarios against real RocketMQ 4.9.7 and 5.5.0 included.
test:
	bash scripts/test.sh

# Everything, including the exhaustive variants (marker `slow`: the launcher's restart and two-broker
# checks, the 20-round crash test).
test-all:
	RMQTWIN_TEST_ALL=1 bash scripts/test.sh

setup:
	bash scripts/setup.sh

# Docker for the tests marked `docker`, ahead of time: what make test's set-up does first, built from
# nothing where missing (engine, compose plugin, base and project images: minutes, once per machine).
docker:
	RMQTWIN_DOCKER=1 bash scripts/setup.sh

# Issue 17's benchmarks (codec, store, broker against real 5.5.0, proxy), then the table of figures
# against their references and targets. Run on a quiet machine; BENCH_ARGS=--quick for a smoke run.
bench:
	.venv/bin/python benchmarks/run_all.py $(BENCH_ARGS)
