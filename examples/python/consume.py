#!/usr/bin/python3
"""examples/python/consume.py — an ordinary confluent-kafka consumer; the
scadles interceptor plugin, named only in the configuration, trains a model
on the records it consumes (docs/PLUGIN.md).

usage: consume.py BOOTSTRAP TOPIC_REGEX JOB_JSON SUMMARY_JSON [IDLE_S]

Consumes until no record arrived for IDLE_S seconds (default 3) after the
first one (or for 60 s before any), then closes
the consumer; the plugin trains what is left, evaluates on the held-out set
and writes its final statistics to SUMMARY_JSON.
"""
import sys
import time

from confluent_kafka import Consumer, KafkaError


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    bootstrap, pattern, job, summary = sys.argv[1:5]
    idle = float(sys.argv[5]) if len(sys.argv) > 5 else 3.0
    consumer = Consumer({
        "bootstrap.servers": bootstrap,
        "group.id": "scadles-python",
        "auto.offset.reset": "earliest",
        # The only lines that concern the plugin:
        "plugin.library.paths": "libscadles",
        "scadles.config": job,
        "scadles.summary.file": summary,
        "scadles.queue.block.ms": "-1",
    })
    consumer.subscribe([pattern])
    n, last = 0, time.monotonic()
    while time.monotonic() - last < (idle if n else 60.0):
        msgs = consumer.consume(num_messages=500, timeout=0.2)
        for m in msgs:
            if m.error() is None:
                n += 1
            elif m.error().code() != KafkaError._PARTITION_EOF:
                print("consume error:", m.error(), file=sys.stderr)
        if msgs:
            last = time.monotonic()
    consumer.close()  # the plugin flushes, evaluates and writes the summary here
    print("consumed %d records" % n)


if __name__ == "__main__":
    main()
