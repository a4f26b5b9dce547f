"""rmqtwin: a Python/Twisted twin of Apache RocketMQ.

The fixed top-level folders of the source tree (``codec/``, ``fakes/``, ``store_mirror/``,
``proxy/``, ``conformance/``, ``spark/``) are installed as subpackages of this namespace.
"""

__version__ = "0.1.0"
