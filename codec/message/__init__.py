"""Messages as the broker stores and serves them, one module per concern.

``constants`` (magics, record positions, ``MessageSysFlag``, ``MessageConst``), ``properties`` (the
properties string, tags and body hashes), ``ids`` (offset msgIds, UNIQ_KEY), ``model`` (``Message``,
``MessageExt``), ``record`` (the stored record: commitlog entry and pull/query/view body) and ``batch``
(SEND_BATCH_MESSAGE bodies). The public names of all of them (each module's ``__all__``) are importable
from this package.
"""

from __future__ import annotations

from rmqtwin.codec.message import batch, constants, ids, model, properties, record
from rmqtwin.codec.message.batch import *  # noqa: F403
from rmqtwin.codec.message.constants import *  # noqa: F403
from rmqtwin.codec.message.ids import *  # noqa: F403
from rmqtwin.codec.message.model import *  # noqa: F403
from rmqtwin.codec.message.properties import *  # noqa: F403
from rmqtwin.codec.message.record import *  # noqa: F403

__all__: list[str] = []
__all__ += batch.__all__
__all__ += constants.__all__
__all__ += ids.__all__
__all__ += model.__all__
__all__ += properties.__all__
__all__ += record.__all__
