"""Encoding of wire Structs: numpy arrays travel as raw buffers (msgpack Ext) or typed JSON objects.

Every array field in the data model is annotated ``np.ndarray``; these hooks keep its dtype across
msgpack (for ZeroMQ) and JSON (for records on disk). Build encoders/decoders once per socket or file.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, TypeVar

import msgspec
import numpy as np

T = TypeVar("T")

_ARRAY_EXT = 1


def _enc_hook(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        dt = obj.dtype.str.encode()
        return msgspec.msgpack.Ext(_ARRAY_EXT, bytes([len(dt)]) + dt + np.ascontiguousarray(obj).tobytes())
    if isinstance(obj, np.generic):
        return obj.item()
    raise NotImplementedError(f"cannot encode {type(obj).__name__}")


def _json_enc_hook(obj: Any) -> Any:
    if isinstance(obj, np.ndarray):
        return {"dtype": obj.dtype.str, "data": obj.tolist()}
    if isinstance(obj, np.generic):
        return obj.item()
    raise NotImplementedError(f"cannot encode {type(obj).__name__}")


def _ext_hook(code: int, data: memoryview) -> Any:
    if code != _ARRAY_EXT:
        raise ValueError(f"unknown msgpack extension {code}")
    n = data[0]
    dtype = np.dtype(bytes(data[1 : 1 + n]).decode())
    return np.frombuffer(data[1 + n :], dtype=dtype).copy()


def _dec_hook(tp: type, obj: Any) -> Any:
    if tp is np.ndarray:
        if isinstance(obj, np.ndarray):
            return obj
        if isinstance(obj, dict) and "dtype" in obj and "data" in obj:
            return np.asarray(obj["data"], dtype=np.dtype(obj["dtype"]))
        raise msgspec.ValidationError(f"expected an array object {{dtype, data}}, got {type(obj).__name__}")
    raise NotImplementedError(f"cannot decode {tp}")


def msgpack_encoder() -> msgspec.msgpack.Encoder:
    return msgspec.msgpack.Encoder(enc_hook=_enc_hook)


def msgpack_decoder(tp: type[T]) -> msgspec.msgpack.Decoder[T]:
    return msgspec.msgpack.Decoder(tp, ext_hook=_ext_hook, dec_hook=_dec_hook)


def json_encoder() -> msgspec.json.Encoder:
    return msgspec.json.Encoder(enc_hook=_json_enc_hook)


def json_decoder(tp: type[T]) -> msgspec.json.Decoder[T]:
    return msgspec.json.Decoder(tp, dec_hook=_dec_hook)


_MP_ENC = msgpack_encoder()
_JSON_ENC = json_encoder()


def to_msgpack(obj: Any) -> bytes:
    return _MP_ENC.encode(obj)


def to_json(obj: Any) -> bytes:
    return _JSON_ENC.encode(obj)


def from_json(data: bytes | str, tp: type[T]) -> T:
    return json_decoder(tp).decode(data)


def read_jsonl(path: str | os.PathLike[str], tp: type[T]) -> Iterator[T]:
    """Every ``tp`` of a JSONL file (one per line, blank lines skipped); a bad line fails naming file and line."""
    dec = json_decoder(tp)
    with open(path, "rb") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                yield dec.decode(line)
            except msgspec.DecodeError as err:
                raise ValueError(f"{path}:{n}: not a {tp.__name__}: {err}") from None
