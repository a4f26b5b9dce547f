"""The proxy's sans-IO core: one proxied connection as bytes in, commands out.

A :class:`ProxySession` knows nothing of sockets or clocks (as h11 and h2 do for HTTP): the Twisted
adapter (:mod:`rmqtwin.proxy.forwarding`) hands it what one side sent and carries out the commands it
returns, in order: :class:`Send` these bytes to a side, :class:`Record` these frames, :class:`Delay`
what follows to a side, :class:`Close` the connection. Everything the proxy does besides forwarding is a
:class:`Hook` on the session, in the manner of mitmproxy's addons: recording
(:class:`RecordHook`), broker-address rewriting (:class:`RewriteHook`) and fault injection
(:class:`rmqtwin.proxy.faults.FaultHook`).

A hook that reads headers says so (``reads_heads``): the session then reads each frame's header once
(:func:`~rmqtwin.proxy.wire.read_head`) and hands the same :class:`~rmqtwin.proxy.wire.FrameHead` to
every hook, so the metrics and the msgId rewriting, which both read every answer, share one read.

A hook that only watches (recording, metrics) sees the frames of a read after the read was forwarded:
the adapter carries out :meth:`ProxySession.forward`'s commands, then :meth:`ProxySession.watch`'s, so
the bytes leave before anything watches them. A hook that may change, drop or answer frames *holds* a
direction: that direction's bytes are then forwarded frame by frame, after every holding hook has seen
each frame. A direction starts or stops being held only on a frame boundary, so a hook never sees a
frame of which some bytes already left.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rmqtwin.codec.frame import DEFAULT_MAX_FRAME_SIZE, FrameSplitter
from rmqtwin.proxy.capture import DIR_TO_CLIENT, DIR_TO_SERVER, FLAG_RAW, FLAG_REWRITTEN
from rmqtwin.proxy.wire import FrameHead, read_head

__all__ = [
    "BrokerRewriteHook",
    "Close",
    "Command",
    "Delay",
    "Heads",
    "Hook",
    "ProxySession",
    "Record",
    "RecordHook",
    "RewriteHook",
    "Send",
]

BOTH = frozenset((DIR_TO_SERVER, DIR_TO_CLIENT))


@dataclass(slots=True)
class Send:
    """Write ``data`` to one side: ``DIR_TO_SERVER`` is the upstream, ``DIR_TO_CLIENT`` the client."""

    to: int
    data: bytes


@dataclass(slots=True)
class Record:
    """Record ``frames`` that arrived together in ``direction`` (``flags``: FLAG_RAW, FLAG_REWRITTEN)."""

    direction: int
    frames: list[bytes]
    flags: int = 0


@dataclass(slots=True)
class Delay:
    """What is sent to side ``to`` after this command leaves no earlier than ``seconds`` from now.

    Order is kept: bytes sent after a delayed frame wait behind it.
    """

    to: int
    seconds: float


@dataclass(slots=True)
class Close:
    """Close both legs; ``abort`` resets the client's connection (RST) instead of a FIN."""

    reason: str
    abort: bool = False


Command = Send | Record | Delay | Close
"""Commands are plain (not frozen) dataclasses: a frozen one's ``__init__`` costs several times more,
and the proxy makes two or three per frame."""

Heads = list[FrameHead | None]
"""The heads of a list of frames, in order (``None``: a header that cannot be read)."""


class Hook:
    """One concern of the proxy, attached to a session. The defaults do nothing.

    ``directions`` are the directions the hook ever looks at (the session only splits those into
    frames). :meth:`holds` says whether the hook must see a direction's frames *before* they are
    forwarded; it may change at run time (a fault rule added), and takes effect on a frame boundary.
    A hook whose ``reads_heads`` is true is handed each frame's :class:`FrameHead` (read once per frame
    for all hooks); the others may be handed ``None`` in its place.
    """

    directions: frozenset[int] = BOTH
    reads_heads: bool = False
    always_holds: frozenset[int] = frozenset()
    """Directions the hook holds for good (the address rewriting): the session asks :meth:`holds`
    only of the hooks that override it."""

    def holds(self, direction: int) -> bool:
        return direction in self.always_holds

    def frame(self, direction: int, frame: bytes, head: FrameHead | None, out: list[Command]) -> bytes | None:
        """A held frame: return it (forward unchanged), a new frame (forward that instead) or None
        (forward nothing); commands appended to ``out`` are carried out before the forward."""
        return frame

    def observe(
        self, direction: int, frames: list[bytes], heads: Heads | None, flags: int, out: list[Command]
    ) -> None:
        """Frames as they arrived from the wire (or unframed chunks, FLAG_RAW), after forwarding;
        ``heads`` are theirs (``None`` for unframed chunks, or when no hook reads heads)."""


class RecordHook(Hook):
    """Records every frame as it arrived; a frame forwarded changed is recorded in its original form,
    flagged FLAG_REWRITTEN, so a capture reads as if the client had talked to the cluster directly."""

    def observe(
        self, direction: int, frames: list[bytes], heads: Heads | None, flags: int, out: list[Command]
    ) -> None:
        out.append(Record(direction, frames, flags))


class RewriteHook(Hook):
    """Broker-address rewriting of upstream-to-client frames (:mod:`rmqtwin.proxy.rewrite`)."""

    directions = always_holds = frozenset((DIR_TO_CLIENT,))

    def __init__(self, rewrite: Callable[[bytes], bytes | None]) -> None:
        self.rewrite = rewrite

    def frame(self, direction: int, frame: bytes, head: FrameHead | None, out: list[Command]) -> bytes | None:
        new = self.rewrite(frame)
        return frame if new is None else new


class BrokerRewriteHook(Hook):
    """The offset msgIds and store hosts a broker names in what it sends to clients
    (:meth:`rmqtwin.proxy.rewrite.AddressRewriter.rewrite_broker_frame`), read from the frame's head."""

    directions = always_holds = frozenset((DIR_TO_CLIENT,))
    reads_heads = True

    def __init__(self, rewrite: Callable[[bytes, FrameHead | None], bytes | None]) -> None:
        self.rewrite = rewrite

    def frame(self, direction: int, frame: bytes, head: FrameHead | None, out: list[Command]) -> bytes | None:
        new = self.rewrite(frame, head)
        return frame if new is None else new


class ProxySession:
    """One client connection and its upstream connection, as a state machine.

    ``framed`` is false for streams that are not the remoting protocol (a broker's HA port): they are
    forwarded and observed as raw chunks. A framed direction whose length word turns impossible
    (TLS, garbage) goes raw for good, as :class:`FrameSplitter` does.
    """

    __slots__ = ("_holding", "_may_hold", "_observers", "_reads_heads", "_splitters", "hooks", "unwatched")

    def __init__(
        self, hooks: Sequence[Hook], *, framed: bool = True, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE
    ) -> None:
        self.hooks = list(hooks)
        self._splitters: dict[int, FrameSplitter | None] = {
            d: FrameSplitter(max_frame_size) if framed and any(d in h.directions for h in hooks) else None
            for d in (DIR_TO_SERVER, DIR_TO_CLIENT)
        }
        # Only hooks that override a method are asked: the default ones do nothing, per frame. The
        # hooks holding a direction for good hold it from the start; the others are asked on each
        # frame boundary, in the hooks' order with the former.
        self._may_hold: dict[int, list[Hook]] = {
            d: [
                h
                for h in self.hooks
                if d in h.directions and (type(h).holds is not Hook.holds or d in h.always_holds)
            ]
            for d in (DIR_TO_SERVER, DIR_TO_CLIENT)
        }
        self._holding: dict[int, list[Hook]] = {
            d: [h for h in may_hold if d in h.always_holds] for d, may_hold in self._may_hold.items()
        }
        for may_hold in self._may_hold.values():
            if all(type(h).holds is Hook.holds for h in may_hold):
                may_hold.clear()  # the holders never change
        self._observers = [h for h in self.hooks if type(h).observe is not Hook.observe]
        self._reads_heads: dict[int, bool] = {
            d: any(h.reads_heads and d in h.directions for h in self.hooks)
            for d in (DIR_TO_SERVER, DIR_TO_CLIENT)
        }
        """Whether a hook looking at a direction reads heads: that direction's frames are then read once
        each (before the holding hooks if any hold it, else when they are watched)."""
        self.unwatched: list[tuple[int, list[bytes], Heads | None, int]] = []
        """(direction, frames, their heads or None, flags) forwarded and not yet watched: what
        :meth:`watch` hands on."""

    def from_client(self, data: bytes) -> list[Command]:
        return self.receive(DIR_TO_SERVER, data)

    def from_upstream(self, data: bytes) -> list[Command]:
        return self.receive(DIR_TO_CLIENT, data)

    def holders(self, direction: int) -> list[Hook]:
        """The hooks holding ``direction`` now."""
        return self._holding[direction]

    def receive(self, direction: int, data: bytes) -> list[Command]:
        """Bytes that arrived for ``direction`` (DIR_TO_SERVER: from the client); the commands they give:
        :meth:`forward`'s, then :meth:`watch`'s."""
        out = self.forward(direction, data)
        if self.unwatched:
            self.watch(out)
        return out

    def forward(self, direction: int, data: bytes) -> list[Command]:
        """:meth:`receive` but for the watching hooks: the commands that forward ``data`` and what the
        holding hooks ask. What the watching hooks are to see waits for :meth:`watch`: an adapter
        carries these commands out first, so the bytes leave before anything watches them (the
        metrics read every header)."""
        out: list[Command] = []
        splitter = self._splitters[direction]
        watched = self.unwatched if self._observers else None
        if splitter is None:
            out.append(Send(direction, data))
            if watched is not None:
                watched.append((direction, [bytes(data)], None, FLAG_RAW))
            return out
        holders = self._holding[direction]
        may_hold = self._may_hold[direction]
        if may_hold and not splitter.buffered and not splitter.raw:
            # on a frame boundary: the set of holding hooks may change here
            holders = [h for h in may_hold if h.holds(direction)]
            self._holding[direction] = holders
        if not holders:
            out.append(Send(direction, data))
            frames = splitter.feed(data)
            if frames and watched is not None:
                watched.append((direction, frames, None, 0))
        else:
            frames = splitter.feed(data)
            if frames:
                self._through_holders(direction, frames, holders, out)
            if splitter.raw:
                chunks = splitter.take_raw()
                for chunk in chunks:
                    out.append(Send(direction, chunk))
                if chunks and watched is not None:
                    watched.append((direction, chunks, None, FLAG_RAW))
                return out
        if splitter.raw:
            chunks = splitter.take_raw()
            if chunks and watched is not None:
                watched.append((direction, chunks, None, FLAG_RAW))
        return out

    def watch(self, out: list[Command] | None = None) -> list[Command]:
        """The watching hooks' commands for what was forwarded since the last call (each hook's
        :meth:`Hook.observe`, in order), appended to ``out`` when given."""
        if out is None:
            out = []
        watched = self.unwatched
        if watched:
            self.unwatched = []
            observers = self._observers
            for direction, frames, read, flags in watched:
                heads = read
                if heads is None and not flags and self._reads_heads[direction]:
                    # frames no hook held: their heads are read here, after their bytes left
                    heads = [read_head(frames[0])] if len(frames) == 1 else [read_head(f) for f in frames]
                for hook in observers:
                    hook.observe(direction, frames, heads, flags, out)
        return out

    def _through_holders(
        self, direction: int, frames: list[bytes], holders: list[Hook], out: list[Command]
    ) -> None:
        reads_heads = self._reads_heads[direction]
        plain: list[bytes] = []
        changed: list[bytes] = []
        plain_heads: Heads = []
        changed_heads: Heads = []
        last = holders[-1]
        for frame in frames:
            head = current_head = read_head(frame) if reads_heads else None
            current = frame
            for hook in holders:
                passed = hook.frame(direction, current, current_head, out)
                if passed is None:  # swallowed: recorded as it arrived, not forwarded
                    plain.append(frame)
                    plain_heads.append(head)
                    break
                if passed is not current and reads_heads and hook is not last:
                    current_head = read_head(passed)  # the next holders see the frame as changed
                current = passed
            else:
                if current is frame:
                    plain.append(frame)
                    plain_heads.append(head)
                else:
                    changed.append(frame)
                    changed_heads.append(head)
                out.append(Send(direction, current))
        if self._observers:
            if plain:
                self.unwatched.append((direction, plain, plain_heads if reads_heads else None, 0))
            if changed:
                self.unwatched.append(
                    (direction, changed, changed_heads if reads_heads else None, FLAG_REWRITTEN)
                )
