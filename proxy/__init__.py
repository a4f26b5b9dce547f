"""A recording proxy in front of a real RocketMQ cluster."""
