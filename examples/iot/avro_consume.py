#!/usr/bin/env python3
"""avro_consume.py — prints a topic's Avro records (framed for a Schema Registry) as JSON lines.

Reads TOPIC from its beginning with confluent-kafka's AvroDeserializer (the
writer schema fetched from the registry by each record's id) and prints
each record as one JSON object, with its key as "_key", until no record
came for --idle seconds. Every partition is read (assigned, not as a group
member: nothing is committed). For `scadles predict --avro`'s predictions,
say.

usage: avro_consume.py TOPIC --bootstrap HOST:PORT --registry URL
                       [--auth user:password] [--idle S]

Needs confluent-kafka with its Avro extras (pip install
'confluent-kafka[avro,schemaregistry]').
"""
import argparse
import json
import sys
import uuid

from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("topic")
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--registry", required=True)
    ap.add_argument("--auth", default="")
    ap.add_argument("--idle", type=float, default=5.0)
    a = ap.parse_args()
    conf = {"url": a.registry}
    if a.auth:
        conf["basic.auth.user.info"] = a.auth
    deserialize = AvroDeserializer(SchemaRegistryClient(conf))
    consumer = Consumer({"bootstrap.servers": a.bootstrap,
                         "group.id": "avro-consume-" + uuid.uuid4().hex,
                         "enable.auto.commit": False})
    meta = consumer.list_topics(a.topic, timeout=10).topics.get(a.topic)
    if meta is None or meta.error is not None or not meta.partitions:
        print("avro_consume: no topic %s" % a.topic, file=sys.stderr)
        return 1
    consumer.assign([TopicPartition(a.topic, p, OFFSET_BEGINNING) for p in meta.partitions])
    ctx = SerializationContext(a.topic, MessageField.VALUE)
    idle, n = 0.0, 0
    while idle < a.idle:
        m = consumer.poll(0.5)
        if m is None:
            idle += 0.5
            continue
        if m.error():
            print("avro_consume: %s" % m.error(), file=sys.stderr)
            continue
        idle = 0.0
        if m.value() is None:  # a tombstone
            continue
        record = deserialize(m.value(), ctx)
        record["_key"] = m.key().decode(errors="replace") if m.key() is not None else None
        print(json.dumps(record))
        n += 1
    consumer.close()
    print("avro_consume: %d records of %s" % (n, a.topic), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
