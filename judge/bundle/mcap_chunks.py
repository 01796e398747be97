"""The bundle MCAP's records: ``mcap.writer.Writer``'s file, byte for byte, packed faster.

:func:`judge.bundle.write.write_mcap` writes one record per camera frame and per joint or
gripper sample (tens of thousands a bundle). ``mcap.writer.Writer`` spends ~10 µs of Python
on each (a ``Message`` dataclass, seven stream writes, statistics); here a message is one
``struct.pack`` into the open chunk. Everything else — the header, the schemas and channels
written into the chunk that first uses them, zstd chunks of 1 MiB with their CRCs, the
message indexes, metadata, the summary (schemas, channels, statistics, chunk, attachment
and metadata indexes, summary offsets) and the footer — is the library's own record
classes in the library's order, with ``Writer``'s defaults. ``tests/unit/test_mcap_chunks.py``
checks the bytes against ``mcap.writer.Writer`` on the same calls, across chunk
boundaries.
"""

from __future__ import annotations

import struct
import zlib
from typing import IO

import zstandard
from mcap.data_stream import RecordBuilder
from mcap.opcode import Opcode
from mcap.records import (
    Channel,
    Chunk,
    ChunkIndex,
    DataEnd,
    Footer,
    Header,
    Metadata,
    MetadataIndex,
    Schema,
    Statistics,
    SummaryOffset,
)
from mcap.writer import MCAP0_MAGIC

#: opcode, record length, channel id, sequence, log time, publish time (then the data)
_MESSAGE = struct.Struct("<BQHIQQ")
_MESSAGE_FIELDS = 2 + 4 + 8 + 8
_OPCODE_MESSAGE = int(Opcode.MESSAGE)


class ChunkedWriter:
    """An MCAP writer with ``mcap.writer.Writer``'s defaults and output (see the module).

    The same calls in the same order as that ``Writer``: ``start``, ``register_schema``,
    ``register_channel``, ``add_message`` (or ``add_messages`` for many), ``add_metadata``,
    ``finish``. Messages are published at their log time.
    """

    def __init__(self, stream: IO[bytes], chunk_size: int = 1024 * 1024) -> None:
        self._stream = stream
        self._chunk_size = chunk_size
        self._rb = RecordBuilder()
        self._schemas: list[Schema] = []
        self._channels: list[Channel] = []
        self._chunk = bytearray()
        self._chunk_messages = 0
        self._chunk_start = self._chunk_end = 0
        self._index: dict[int, list[int]] = {}  # channel -> [log time, offset, ...]
        self._chunk_indexes: list[ChunkIndex] = []
        self._metadata_indexes: list[MetadataIndex] = []
        self._counts: dict[int, int] = {}  # channel -> messages, in order of first message
        self._messages = 0
        self._start = self._end = 0

    def start(self, library: str, profile: str = "") -> None:
        self._stream.write(MCAP0_MAGIC)
        Header(profile, library).write(self._rb)
        self._flush()

    def register_schema(self, name: str, encoding: str, data: bytes) -> int:
        schema = Schema(id=len(self._schemas) + 1, data=data, encoding=encoding, name=name)
        self._schemas.append(schema)
        self._into_chunk(schema)
        return schema.id

    def register_channel(self, topic: str, message_encoding: str, schema_id: int) -> int:
        channel = Channel(id=len(self._channels) + 1, topic=topic,
                          message_encoding=message_encoding, schema_id=schema_id, metadata={})
        self._channels.append(channel)
        self._into_chunk(channel)
        return channel.id

    def add_message(self, channel_id: int, log_time: int, data: bytes,
                    publish_time: int) -> None:
        if publish_time != log_time:
            raise ValueError("ChunkedWriter writes messages published at their log time")
        self.add_messages([channel_id], [log_time], [data])

    def add_messages(self, channels: list[int], times: list[int], datas: list[bytes]) -> None:
        """Messages in this order, each published at its log time: the same records as
        ``add_message`` on each in turn (one loop, no call per message)."""
        chunk, index, counts = self._chunk, self._index, self._counts
        pack, size = _MESSAGE.pack, self._chunk_size
        first, last = self._chunk_start, self._chunk_end
        n_chunk = self._chunk_messages
        start, end = self._start, self._end
        if self._messages == 0 and times:
            start = times[0]
        for channel_id, log_time, data in zip(channels, times, datas, strict=True):
            offset = len(chunk)
            chunk += pack(_OPCODE_MESSAGE, _MESSAGE_FIELDS + len(data), channel_id, 0,
                          log_time, log_time)
            chunk += data
            pairs = index.get(channel_id)
            if pairs is None:
                pairs = index[channel_id] = []
            pairs += (log_time, offset)
            if n_chunk == 0 or log_time < first:
                first = log_time
            if log_time > last:
                last = log_time
            n_chunk += 1
            if log_time < start:
                start = log_time
            if log_time > end:
                end = log_time
            counts[channel_id] = counts.get(channel_id, 0) + 1
            if len(chunk) > size:
                self._chunk_start, self._chunk_end, self._chunk_messages = first, last, n_chunk
                self._finish_chunk()
                chunk, index = self._chunk, self._index
                first = last = n_chunk = 0
        self._chunk_start, self._chunk_end, self._chunk_messages = first, last, n_chunk
        self._start, self._end = start, end
        self._messages += len(times)

    def add_metadata(self, name: str, data: dict[str, str]) -> None:
        self._flush()
        offset = self._stream.tell()
        Metadata(name=name, metadata=data).write(self._rb)
        self._metadata_indexes.append(MetadataIndex(offset=offset, length=self._rb.count,
                                                    name=name))
        self._flush()

    def finish(self) -> None:
        """The last chunk, the data end, the summary and the footer (``Writer.finish``)."""
        self._finish_chunk()
        DataEnd(0).write(self._rb)
        self._flush()
        summary_start = self._stream.tell()
        sb = RecordBuilder()
        offsets: list[SummaryOffset] = []

        def group(opcode: Opcode, records: list) -> None:
            begin = sb.count
            for r in records:
                r.write(sb)
            offsets.append(SummaryOffset(group_opcode=opcode, group_start=summary_start + begin,
                                         group_length=sb.count - begin))

        group(Opcode.SCHEMA, self._schemas)
        group(Opcode.CHANNEL, self._channels)
        group(Opcode.STATISTICS, [Statistics(
            attachment_count=0, channel_count=len(self._channels),
            channel_message_counts=self._counts, chunk_count=len(self._chunk_indexes),
            message_count=self._messages, metadata_count=len(self._metadata_indexes),
            message_start_time=self._start, message_end_time=self._end,
            schema_count=len(self._schemas))])
        group(Opcode.CHUNK_INDEX, self._chunk_indexes)
        group(Opcode.ATTACHMENT_INDEX, [])
        group(Opcode.METADATA_INDEX, self._metadata_indexes)
        offset_start = summary_start + sb.count
        for o in offsets:
            o.write(sb)
        summary = sb.end()
        crc = zlib.crc32(struct.pack("<BQQQ", Opcode.FOOTER, 8 + 8 + 4,
                                     summary_start if summary else 0, offset_start),
                         zlib.crc32(summary))
        self._stream.write(summary)
        Footer(summary_start=summary_start if summary else 0, summary_offset_start=offset_start,
               summary_crc=crc).write(self._rb)
        self._flush()
        self._stream.write(MCAP0_MAGIC)

    def _into_chunk(self, record: Schema | Channel) -> None:
        rb = RecordBuilder()
        record.write(rb)
        self._chunk += rb.end()
        if len(self._chunk) > self._chunk_size:
            self._finish_chunk()

    def _flush(self) -> None:
        self._stream.write(self._rb.end())

    def _finish_chunk(self) -> None:
        if self._chunk_messages == 0:
            return
        data = bytes(self._chunk)
        compressed = zstandard.compress(data)
        chunk = Chunk(compression="zstd", data=compressed, message_start_time=self._chunk_start,
                      message_end_time=self._chunk_end, uncompressed_crc=zlib.crc32(data),
                      uncompressed_size=len(data))
        self._flush()
        chunk_offset = self._stream.tell()
        chunk.write(self._rb)
        index = ChunkIndex(message_start_time=self._chunk_start,
                           message_end_time=self._chunk_end, chunk_start_offset=chunk_offset,
                           chunk_length=self._rb.count, message_index_offsets={},
                           message_index_length=0, compression="zstd",
                           compressed_size=len(compressed), uncompressed_size=len(data))
        self._flush()
        index_offset = self._stream.tell()
        records = bytearray()
        for channel_id, pairs in self._index.items():  # MessageIndex records, packed at once
            index.message_index_offsets[channel_id] = index_offset + len(records)
            records += struct.pack(f"<BQHI{len(pairs)}Q", Opcode.MESSAGE_INDEX,
                                   2 + 4 + 8 * len(pairs), channel_id, 8 * len(pairs), *pairs)
        index.message_index_length = len(records)
        self._stream.write(records)
        self._chunk_indexes.append(index)
        self._chunk = bytearray()
        self._index = {}
        self._chunk_messages = 0
        self._chunk_start = self._chunk_end = 0
