#!/usr/bin/env python3
"""Writes tests/data/wire/invalid/<case>/{input,error}: damaged wire messages
(see core/include/sc_wire.h) and a text the decoder's error must contain.
Run from the top of the tree; the output is committed."""
import os
import struct

POLY = 0x82F63B78
TAB = []
for n in range(256):
    c = n
    for _ in range(8):
        c = (c >> 1) ^ POLY if c & 1 else c >> 1
    TAB.append(c)


def crc32c(data, crc=0):
    crc ^= 0xFFFFFFFF
    for b in data:
        crc = TAB[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def frame(mtype, body, magic=b"SCDW", version=1, flags=0, length=None, crc=None):
    length = len(body) if length is None else length
    head = magic + struct.pack("<BBHI", version, mtype, flags, length)
    if crc is None:
        crc = crc32c(body, crc32c(head))
    return head + struct.pack("<I", crc) + body


def update(worker=1, shard=0, seq=1, t_read=0, samples=8, kind=0, codec=0, plen=None,
           payload=None):
    if payload is None:
        payload = struct.pack("<BBHI", codec, 0, 0, 1) + struct.pack("<f", 1.5)
    plen = len(payload) if plen is None else plen
    return struct.pack("<IIQQIBBHI", worker, shard, seq, t_read, samples, kind, codec, 0,
                       plen) + payload


def control(kind=2, nfields=0, fields=b""):
    return struct.pack("<BBHIqII", kind, 0, 0, 3, 1000, nfields, 0) + fields


def model(count, body_params):
    return struct.pack("<IIQQIIqIIII", 0, 0, 1, 0, count, 0, -1, 0, 0, 0, 0) + body_params


def samples(count, c, h, w, flags=0, data=b""):
    return struct.pack("<IIIIIIQ", 0, count, c, h, w, flags, 1) + data


good = frame(4, control())
CASES = {
    "empty": (b"", "shorter than the 16-byte header"),
    "short_header": (good[:10], "shorter than the 16-byte header"),
    "bad_magic": (frame(4, control(), magic=b"KAFK"), "bad magic"),
    "version_2": (frame(4, control(), version=2), "format version 2"),
    "length_too_long": (frame(4, control(), length=len(control()) + 8), "header says"),
    "length_too_short": (frame(4, control(), length=3), "header says"),
    "crc_mismatch": (good[:-1] + bytes([good[-1] ^ 0x40]), "CRC32C mismatch"),
    "unknown_type": (frame(7, control()), "unknown type 7"),
    "unknown_flags": (frame(4, control(), flags=2), "flags 0x0002"),
    "signed_without_key": (frame(4, control() + b"\0" * 32, flags=1), "signed"),
    "signed_too_short": (frame(4, b"\0" * 20, flags=1), "cannot hold the tag"),
    "update_short_body": (frame(1, update()[:20]), "shorter than its 36 fixed bytes"),
    "update_payload_overflow": (frame(1, update(plen=0xFFFFFFFF)), "payload length 4294967295"),
    "update_codec_mismatch": (frame(1, update(codec=1, payload=update()[36:])),
                              "not a codec 1 payload"),
    "update_unknown_codec": (frame(1, update(codec=200)), "unknown codec 200"),
    "model_count_overflow": (frame(2, model(0xFFFFFFFF, b"\0" * 8)), "params"),
    "samples_shape_overflow": (frame(3, samples(0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF,
                                                0xFFFFFFFF, data=b"\0" * 16)),
                               "do not fill"),
    "samples_zero_shape": (frame(3, samples(1, 0, 28, 28)), "empty sample shape"),
    "samples_missing_labels": (frame(3, samples(2, 1, 1, 1, flags=1, data=b"\0" * 8)),
                               "with labels"),
    "control_too_many_fields": (frame(4, control(nfields=1000)), "1000 fields"),
    "control_field_count_overflow": (frame(4, control(nfields=2, fields=b"\0" * 12)),
                                     "2 fields need"),
    "control_unknown_kind": (frame(4, control(kind=9)), "unknown kind 9"),
}

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "invalid")
for name, (data, err) in CASES.items():
    d = os.path.join(root, name)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "input"), "wb") as f:
        f.write(data)
    with open(os.path.join(d, "error"), "w") as f:
        f.write(err + "\n")
print(len(CASES), "cases in", root)
