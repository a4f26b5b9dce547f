"""Real Apache RocketMQ and the real Java client, and the scenario suite run against both."""
