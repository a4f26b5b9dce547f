"""The broker's commitlog store, byte-compatible with Apache RocketMQ's on-disk layout."""
