"""Sans-IO implementation of the RocketMQ remoting protocol: bytes in, events out."""
