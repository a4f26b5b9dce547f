.PHONY: run test test-all setup

# Set up and run rmqtwin on its embedded default (namesrv 9876, broker 10911, ./rmqtwin-store).
run:
	bash scripts/run.sh

# Set up and pass the whole test suite (ruff, mypy, pytest).
test:
	bash scripts/test.sh

# Everything, including the long scenario tests against real RocketMQ 4.9.7 and 5.5.0 (marker `slow`).
test-all:
	RMQTWIN_TEST_ALL=1 bash scripts/test.sh

setup:
	bash scripts/setup.sh
