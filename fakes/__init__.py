"""A drop-in namesrv + broker served by Twisted."""
