"""The last session results the coordinator keeps for clients that ask (``TaskStatus(with_results=True)``).

Results are held encoded (msgpack), bounded by count (``coordinator.result_buffer``) and by bytes
(``coordinator.result_buffer_mb``), oldest dropped first: a SWE session's result carries its whole conversation
and can weigh a megabyte, so a count alone does not bound the coordinator's memory.
"""

from __future__ import annotations

from collections import OrderedDict

from polar_hpc.wire.codec import msgpack_decoder, msgpack_encoder
from polar_hpc.wire.results import SessionResult

_encoder = msgpack_encoder()
_decoder = msgpack_decoder(SessionResult)


class ResultBuffer:
    def __init__(self, max_results: int, max_bytes: int) -> None:
        self.max_results = max_results
        self.max_bytes = max_bytes
        self.nbytes = 0
        self._items: OrderedDict[str, bytes] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def add(self, result: SessionResult) -> None:
        blob = _encoder.encode(result)
        old = self._items.pop(result.key, None)
        if old is not None:
            self.nbytes -= len(old)
        self._items[result.key] = blob
        self.nbytes += len(blob)
        while self._items and (len(self._items) > self.max_results or self.nbytes > self.max_bytes):
            _, dropped = self._items.popitem(last=False)
            self.nbytes -= len(dropped)

    def get(self, key: str) -> SessionResult | None:
        blob = self._items.get(key)
        return None if blob is None else _decoder.decode(blob)
