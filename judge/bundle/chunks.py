"""Fast MCAP message iteration over the chunk index (the hot path of ``decode``).

The ``mcap`` library's reader parses every record through a generic byte stream
and orders messages through a heap; on a 30 s, 3-camera bundle that is most of
the read time. Bundles are read whole and in file order here: each chunk that
holds a wanted channel is read once, decompressed, and its Message records are
sliced with ``struct`` — the record layout of the MCAP specification. Each chunk's
``uncompressed_crc`` is verified (where the writer recorded one, i.e. non-zero), and
:func:`check_data_crc` verifies the DataEnd record's data-section CRC and the Footer's
summary-section CRC where present:

    Chunk   0x06: start u64 | end u64 | uncompressed_size u64 | crc u32 |
                  compression str(u32 len) | records bytes(u64 len)
    Message 0x05: channel_id u16 | sequence u32 | log_time u64 | publish_time u64 | data
"""

from __future__ import annotations

import struct
import zlib
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
_OP_FOOTER, _OP_DATA_END = 0x02, 0x0F
_FOOTER = struct.Struct("<BQQQI")  # opcode, length 20, summary_start, summary_offset_start, crc
_DATA_END = struct.Struct("<BQI")  # opcode, length 4, data_section_crc
_MAGIC_LEN = 8


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


def _records(raw: bytes, where: str, topics: str) -> memoryview:
    """The decompressed records of one Chunk record ``raw``, checked against its CRC.

    Args:
        raw: the whole Chunk record.
        where: ``PATH: chunk at byte N``, for errors.
        topics: the chunk's channels, for a CRC mismatch.
    """
    op, _ = _REC.unpack_from(raw, 0)
    if op != _OP_CHUNK:
        raise ChunkFormatError(f"{where}: opcode {op:#x}, expected a chunk")
    _, _, usize, crc, clen = _CHUNK_HEAD.unpack_from(raw, 9)
    pos = 9 + _CHUNK_HEAD.size
    compression = bytes(raw[pos:pos + clen]).decode()
    pos += clen
    (rlen,) = struct.unpack_from("<Q", raw, pos)
    pos += 8
    try:
        records = _decompress(compression, memoryview(raw)[pos:pos + rlen], usize)
    except (ValueError, zstandard.ZstdError, RuntimeError) as exc:  # lz4 raises RuntimeError
        raise ChunkFormatError(f"{where}: does not decompress ({exc})") from None
    if crc and (got := zlib.crc32(records)) != crc:  # 0: the writer recorded no CRC
        raise ChunkFormatError(f"{where} (channels {topics}): CRC mismatch: records give "
                               f"{got:#010x}, the chunk says {crc:#010x}")
    return memoryview(records)


def _crc_of(f: IO[bytes], start: int, end: int) -> int:
    f.seek(start)
    got, left = 0, end - start
    while left > 0 and (block := f.read(min(left, 1 << 20))):
        got = zlib.crc32(block, got)
        left -= len(block)
    return got


def check_data_crc(f: IO[bytes], path: str) -> None:
    """Verify the data section's CRC (DataEnd) and the summary section's (Footer), each
    where the writer recorded one (non-zero).

    Raises:
        ChunkFormatError: the CRC of bytes ``0..DataEnd`` differs from the DataEnd record's,
            or that of ``summary_start`` up to the Footer's ``summary_crc`` field differs
            from the Footer's.
    """
    size = f.seek(0, 2)
    footer_at = size - _MAGIC_LEN - _FOOTER.size
    if footer_at < _MAGIC_LEN:
        return
    f.seek(footer_at)
    op, _, summary_start, _, summary_crc = _FOOTER.unpack(f.read(_FOOTER.size))
    if op != _OP_FOOTER:
        return
    crc_at = footer_at + _FOOTER.size - 4
    if summary_start and summary_crc and _MAGIC_LEN <= summary_start < footer_at \
            and (got := _crc_of(f, summary_start, crc_at)) != summary_crc:
        raise ChunkFormatError(f"{path}: summary section CRC mismatch: bytes {summary_start}-"
                               f"{crc_at - 1} give {got:#010x}, the Footer record says "
                               f"{summary_crc:#010x}")
    end_at = (summary_start or footer_at) - _DATA_END.size
    if end_at < _MAGIC_LEN:
        return
    f.seek(end_at)
    op, _, crc = _DATA_END.unpack(f.read(_DATA_END.size))
    if op != _OP_DATA_END or crc == 0:
        return
    if (got := _crc_of(f, 0, end_at)) != crc:
        raise ChunkFormatError(f"{path}: data section CRC mismatch: bytes 0-{end_at} give "
                               f"{got:#010x}, the DataEnd record says {crc:#010x}")


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
        topics = ", ".join(sorted(summary.channels[c].topic for c in ci.message_index_offsets
                                  if c in summary.channels))
        f.seek(ci.chunk_start_offset)
        raw = f.read(ci.chunk_length)
        if len(raw) != ci.chunk_length:
            raise ChunkFormatError(f"{where} is truncated")
        records = _records(raw, where, topics)
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
