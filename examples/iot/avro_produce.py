#!/usr/bin/env python3
"""avro_produce.py — publishes JSON-lines events as Avro, framed for a Schema Registry.

Each line of INPUT (one JSON object, as examples/iot/gen.py writes them) is
serialized by confluent-kafka's AvroSerializer under the writer schema
SCHEMA (an .avsc file), which it registers under the subject TOPIC-value,
and produced to TOPIC, the lines going round-robin to its partitions. A
field missing from an event takes its schema default (null for the
sensors). The record key is the event's "device".

usage: avro_produce.py INPUT SCHEMA --topic T --bootstrap HOST:PORT
                       --registry URL [--auth user:password] [--partitions N]
                       [--extra key=value ...]

Needs confluent-kafka with its Avro extras (pip install
'confluent-kafka[avro,schemaregistry]').
"""
import argparse
import json
import sys

from confluent_kafka import Producer
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("input")
    ap.add_argument("schema")
    ap.add_argument("--topic", required=True)
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--registry", required=True)
    ap.add_argument("--auth", default="")
    ap.add_argument("--partitions", type=int, default=1)
    ap.add_argument("--extra", action="append", default=[],
                    help="key=value set on every event (a v2 field, say)")
    a = ap.parse_args()
    conf = {"url": a.registry}
    if a.auth:
        conf["basic.auth.user.info"] = a.auth
    registry = SchemaRegistryClient(conf)
    with open(a.schema) as f:
        serializer = AvroSerializer(registry, f.read())
    producer = Producer({"bootstrap.servers": a.bootstrap, "linger.ms": 20,
                         "batch.size": 65536, "enable.idempotence": True})
    ctx = SerializationContext(a.topic, MessageField.VALUE)
    extra = dict(kv.split("=", 1) for kv in a.extra)
    failed = []

    def report(err, _msg):
        if err is not None:
            failed.append(err)

    n = 0
    with open(a.input) as f:
        for i, line in enumerate(f):
            event = json.loads(line)
            event.update(extra)
            value = serializer(event, ctx)
            while True:
                try:
                    producer.produce(a.topic, value=value, key=event.get("device", "").encode(),
                                     partition=i % a.partitions, on_delivery=report)
                    break
                except BufferError:
                    producer.poll(0.1)
            producer.poll(0)
            n += 1
    left = producer.flush(60)
    if failed or left:
        print("avro_produce: %d not delivered: %s" % (len(failed) + left, failed[:3]), file=sys.stderr)
        return 1
    print("avro_produce: %d events to %s as Avro (schema %s)" % (n, a.topic, a.schema), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
