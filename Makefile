.PHONY: run test setup lint bench

# Set up and run rmqtwin on its embedded default (namesrv 9876, broker 10911, ./rmqtwin-store).
run:
	bash scripts/run.sh

# Set up and pass the whole test suite (ruff, mypy, pytest).
test:
	bash scripts/test.sh

setup:
	bash scripts/setup.sh
