"""Produce flat-avro messages to Kafka from what flatavro prints: the NDJSON lines of
`flatavro convert` (one message each) or the JSON answers of ``/v1/topics/{topic}/encode`` and
``/v1/convert/{protocol}`` (``{"messages": [...]}``), read from FILE or stdin.

Each message's ``key`` and ``value`` are base64 Confluent frames (``value`` null: a tombstone);
it goes to the topic it names, else the topic of the answer it is in, else ``--topic``. The
producer partitions by key, so each key stays in one partition, in order (README.md,
"Streaming into Delta", pipes ``curl .../encode`` into it).

With ``--raw --topic T`` it produces TiCDC messages instead, as a changefeed would: the input
of ``flatavro convert`` (NDJSON lines ``{"key": text|null, "value": text|null}``, or
``/v1/convert`` bodies ``{"messages": [...]}``), each key and value as its UTF-8 bytes, to T.
Raw messages are unkeyed, so each lands in a partition librdkafka picks at random: give T one
partition to keep their order (README.md, "`flatavro bridge`", does).

Prints ``produced N message(s) to T`` per topic; exit 2 on bad input (naming the message),
1 when the broker does not take every message. Needs confluent-kafka (a dependency of
flatavro itself).
"""

from __future__ import annotations

import argparse
import base64
import binascii
import json
import sys
from collections import Counter
from collections.abc import Iterator
from typing import Any

from confluent_kafka import KafkaError, Message, Producer

Record = tuple[str, bytes | None, bytes | None]


class BadInput(Exception):
    """The input is not what flatavro prints (the text names the message at fault)."""


def documents(text: str) -> Iterator[tuple[int, Any]]:
    """Each JSON document of `text` (NDJSON or concatenated), with the line it starts on."""
    decoder, position = json.JSONDecoder(), 0
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position == len(text):
            return
        line = text.count("\n", 0, position) + 1
        try:
            document, position = decoder.raw_decode(text, position)
        except json.JSONDecodeError as exc:
            raise BadInput(f"line {line}: not JSON ({exc.msg})") from exc
        yield line, document


def _frame(message: dict[str, Any], part: str, where: str) -> bytes | None:
    text = message.get(part)
    if text is None:
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, TypeError) as exc:
        raise BadInput(f"{where}: {part} is not base64 ({exc})") from exc


def records(text: str, default_topic: str | None) -> Iterator[Record]:
    """(topic, key, value) of every message, in input order."""
    for line, document in documents(text):
        if not isinstance(document, dict):
            raise BadInput(f"line {line}: a JSON object was expected")
        if "messages" not in document and "value" not in document:
            error = document.get("detail") or document.get("message")  # a problem+json answer
            raise BadInput(f"line {line}: neither a message nor an answer with messages"
                           + (f" (an error answer: {error})" if error else ""))
        batch = document.get("messages", [document])
        for index, message in enumerate(batch):
            where = f"line {line}" + (f", message {index}" if "messages" in document else "")
            if not isinstance(message, dict):
                raise BadInput(f"{where}: a JSON object was expected")
            topic = message.get("topic") or document.get("topic") or default_topic
            if not topic:
                raise BadInput(f"{where}: names no topic; pass --topic")
            if "value" not in message:
                raise BadInput(f"{where}: has no value (null for a tombstone)")
            yield topic, _frame(message, "key", where), _frame(message, "value", where)


def raw_records(text: str, topic: str) -> Iterator[Record]:
    """(topic, key, value) of every TiCDC message (text as UTF-8 bytes), in input order."""
    for line, document in documents(text):
        batch = document.get("messages", [document]) if isinstance(document, dict) else None
        if not isinstance(batch, list):
            raise BadInput(f"line {line}: a JSON object was expected")
        for index, message in enumerate(batch):
            where = f"line {line}" + (f", message {index}" if "messages" in document else "")
            if not isinstance(message, dict) or "value" not in message:
                raise BadInput(f'{where}: expected {{"key": text|null, "value": text|null}}')
            parts = [message.get("key"), message["value"]]
            for name, part in zip(("key", "value"), parts, strict=True):
                if part is not None and not isinstance(part, str):
                    raise BadInput(f"{where}: {name} is neither text nor null")
            try:
                key, value = (None if p is None else p.encode("utf-8") for p in parts)
            except UnicodeEncodeError as exc:  # a lone surrogate (\ud800) is not UTF-8
                raise BadInput(f"{where}: not UTF-8 text ({exc.reason})") from exc
            yield topic, key, value


def produce(bootstrap_servers: str, messages: Iterator[Record]) -> Counter[str]:
    """Send every message and wait for the broker to take them all; counts by topic.

    Raises:
        RuntimeError: a message was not delivered (the broker's reason).
    """
    failures: list[str] = []

    def delivered(error: KafkaError | None, message: Message) -> None:
        if error is not None:
            failures.append(f"{message.topic()}: {error.str()}")

    # Idempotence: a retried send is neither doubled nor reordered. Log level 3: errors only
    # (a fresh broker's transient "retrying" warnings are not the user's business; a message
    # that fails for good is reported through `delivered`).
    producer = Producer({"bootstrap.servers": bootstrap_servers, "enable.idempotence": True,
                         "log_level": 3})
    sent: Counter[str] = Counter()
    for topic, key, value in messages:
        producer.produce(topic, key=key, value=value, on_delivery=delivered)
        producer.poll(0)
        sent[topic] += 1
    if producer.flush(60) or failures:
        raise RuntimeError(failures[0] if failures else "the broker did not acknowledge every "
                           "message within 60 s")
    return sent


def main(argv: list[str] | None = None) -> int:
    """Read, produce, print the counts."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap-servers", required=True, help="the Kafka brokers")
    parser.add_argument("--topic", help="for messages that name no topic (with --raw: all)")
    parser.add_argument("--raw", action="store_true",
                        help="produce TiCDC messages (text) as they are, to --topic")
    parser.add_argument("file", nargs="?", default="-", metavar="FILE",
                        help="flatavro's JSON output (default '-': stdin)")
    args = parser.parse_args(argv)
    if args.raw and not args.topic:
        parser.error("--raw needs --topic")
    with (open(args.file, encoding="utf-8") if args.file != "-" else sys.stdin) as source:
        text = source.read()
    try:
        messages = list(raw_records(text, args.topic) if args.raw
                        else records(text, args.topic))
    except BadInput as exc:
        print(f"produce: error: {exc}", file=sys.stderr)
        return 2
    try:
        sent = produce(args.bootstrap_servers, iter(messages))
    except RuntimeError as exc:
        print(f"produce: error: {exc}", file=sys.stderr)
        return 1
    for topic, count in sent.items():
        print(f"produced {count} message{'s' if count != 1 else ''} to {topic}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
