"""Fast MCAP message iteration over the chunk index (the hot path of ``decode``).

The ``mcap`` library's reader parses every record through a generic byte stream
and orders messages through a heap; on a 30 s, 3-camera bundle that is most of
the read time. Bundles are read whole and in file order here: each chunk that
holds a wanted channel is read once, decompressed, and its Message records are
sliced with ``struct`` — the record layout of the MCAP specification:

    Chunk   0x06: start u64 | end u64 | uncompressed_size u64 | crc u32 |
                  compression str(u32 len) | records bytes(u64 len)
    Message 0x05: channel_id u16 | sequence u32 | log_time u64 | publish_time u64 | data
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import IO

import zstandard
from mcap.summary import Summary

from judge.errors import McapError

try:
    import lz4.frame as lz4
except ImportError:  # pragma: no cover - lz4 ships with mcap
    lz4 = None

_OP_CHUNK, _OP_MESSAGE = 0x06, 0x05
_REC = struct.Struct("<BQ")
_MSG = struct.Struct("<HIQQ")
_CHUNK_HEAD = struct.Struct("<QQQIi")


class ChunkFormatError(McapError):
    """A chunk's bytes do not follow the MCAP record layout."""


def _decompress(compression: str, data: bytes | memoryview, size: int) -> bytes | memoryview:
    if compression == "":
        return data
    if compression == "zstd":
        return zstandard.ZstdDecompressor().decompress(data, max_output_size=size)
    if compression == "lz4" and lz4 is not None:
        return lz4.decompress(bytes(data))
    raise ValueError(f"unsupported chunk compression {compression!r}")


def _records(raw: bytes, where: str) -> memoryview:
    """The decompressed records of one Chunk record ``raw`` (``where``: path and offset)."""
    op, _ = _REC.unpack_from(raw, 0)
    if op != _OP_CHUNK:
        raise ChunkFormatError(f"{where}: opcode {op:#x}, expected a chunk")
    _, _, usize, _, clen = _CHUNK_HEAD.unpack_from(raw, 9)
    pos = 9 + _CHUNK_HEAD.size
    compression = bytes(raw[pos:pos + clen]).decode()
    pos += clen
    (rlen,) = struct.unpack_from("<Q", raw, pos)
    pos += 8
    try:
        return memoryview(_decompress(compression, memoryview(raw)[pos:pos + rlen], usize))
    except (ValueError, zstandard.ZstdError, RuntimeError) as exc:  # lz4 raises RuntimeError
        raise ChunkFormatError(f"{where}: does not decompress ({exc})") from None


def iter_messages(f: IO[bytes], summary: Summary, channel_ids: set[int],
                  path: str = "MCAP") -> Iterator[tuple[int, int, memoryview]]:
    """Yield ``(channel_id, log_time, data)`` of wanted channels, in file order.

    Raises:
        ChunkFormatError: naming ``path`` and the chunk's byte offset.
    """
    for ci in sorted(summary.chunk_indexes, key=lambda c: c.chunk_start_offset):
        if not channel_ids.intersection(ci.message_index_offsets):
            continue
        where = f"{path}: chunk at byte {ci.chunk_start_offset}"
        f.seek(ci.chunk_start_offset)
        raw = f.read(ci.chunk_length)
        if len(raw) != ci.chunk_length:
            raise ChunkFormatError(f"{where} is truncated")
        records = _records(raw, where)
        end, i = len(records), 0
        while i < end:
            op, length = _REC.unpack_from(records, i)
            i += 9
            if i + length > end:
                raise ChunkFormatError(f"{where}: record overruns")
            if op == _OP_MESSAGE:
                cid, _, log_time, _ = _MSG.unpack_from(records, i)
                if cid in channel_ids:
                    yield cid, log_time, records[i + _MSG.size:i + length]
            i += length
