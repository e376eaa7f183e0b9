"""Print the committed messages of a Kafka topic as ``{"messages": [{"key", "value"}]}``, the
body ``/v1/decode`` takes (README.md, "`flatavro bridge`", pipes it into ``curl .../decode``).

Reads every partition from its first message to its current end as a ``read_committed``
consumer, the way a consumer downstream of ``flatavro bridge`` must read: messages of aborted
or still open transactions are not shown. Nothing is committed to the broker. Keys and values
are base64 (flat-avro frames), or text with ``--encoding utf-8`` (TiCDC messages in a
dead-letter topic); ``--headers`` adds each message's partition, offset and headers. Messages
come in partition, then offset order.

Exit 2 when the topic does not exist or a key or value is not UTF-8 under ``--encoding
utf-8``; 1 when the broker does not answer. Needs confluent-kafka (a dependency of flatavro).
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from typing import Any

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)


class BadInput(Exception):
    """The topic cannot be shown as asked (the text says why)."""


def read_committed(bootstrap_servers: str, topic: str, timeout: float) -> list[Message]:
    """Every committed message of `topic`, in partition, then offset order.

    Raises:
        BadInput: the topic does not exist.
        RuntimeError: the broker does not answer within `timeout` seconds, or fails a fetch.
    """
    consumer = Consumer({"bootstrap.servers": bootstrap_servers, "log_level": 3,
                         "group.id": "flatavro-example-consume", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    try:
        try:
            metadata = consumer.list_topics(topic, timeout).topics[topic]
        except KafkaException as exc:
            raise RuntimeError(f"the broker at {bootstrap_servers} does not answer "
                               f"({exc.args[0].str()})") from exc
        if metadata.error is not None:
            raise BadInput(f"topic {topic}: {metadata.error.str()}")
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING)
                         for p in metadata.partitions])
        messages: list[Message] = []
        ended: set[int] = set()
        while len(ended) < len(metadata.partitions):
            message = consumer.poll(timeout)
            if message is None:
                raise RuntimeError(f"no end of {topic} within {timeout:g} s")
            error = message.error()
            if error is None:
                messages.append(message)
            elif error.code() == KafkaError._PARTITION_EOF:
                ended.add(message.partition())
            else:
                raise RuntimeError(f"{topic}: {error.str()}")
    finally:
        consumer.close()
    return sorted(messages, key=lambda m: (m.partition(), m.offset()))


def _text(data: bytes | None, encoding: str, where: str) -> str | None:
    if data is None:
        return None
    if encoding == "base64":
        return base64.b64encode(data).decode("ascii")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInput(f"{where} is not UTF-8 (byte offset {exc.start}); use --encoding "
                       f"base64") from exc


def shown(message: Message, encoding: str, headers: bool) -> dict[str, Any]:
    """One message as JSON: key and value (and partition, offset, headers with `headers`)."""
    where = f"partition {message.partition()} offset {message.offset()}"
    out: dict[str, Any] = {"key": _text(message.key(), encoding, f"{where}: the key"),
                           "value": _text(message.value(), encoding, f"{where}: the value")}
    if headers:
        out = {"partition": message.partition(), "offset": message.offset(), **out,
               "headers": {name: _text(value, "utf-8", f"{where}: header {name}")
                           for name, value in message.headers() or []}}
    return out


def main(argv: list[str] | None = None) -> int:
    """Read the topic, print one JSON document."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bootstrap-servers", required=True, help="the Kafka brokers")
    parser.add_argument("--topic", required=True)
    parser.add_argument("--encoding", choices=["base64", "utf-8"], default="base64",
                        help="how keys and values are printed (default base64)")
    parser.add_argument("--headers", action="store_true",
                        help="add each message's partition, offset and headers")
    parser.add_argument("--timeout", type=float, default=30.0,
                        help="seconds to wait for the broker (default 30)")
    args = parser.parse_args(argv)
    try:
        messages = read_committed(args.bootstrap_servers, args.topic, args.timeout)
        document = {"messages": [shown(m, args.encoding, args.headers) for m in messages]}
    except BadInput as exc:
        print(f"consume: error: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        print(f"consume: error: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(document))
    return 0


if __name__ == "__main__":
    sys.exit(main())
