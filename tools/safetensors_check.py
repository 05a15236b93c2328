#!/usr/bin/env python3
"""Reads a safetensors file (a stag checkpoint or any other) with nothing but the standard
library, checks its layout against the format, and prints its metadata and tensors.

It shows that stag's files are plain safetensors that any reader understands; it is not part
of the test suite. Usage: tools/safetensors_check.py FILE [--values N]
"""
import argparse
import json
import struct
import sys

# Element size and struct code per safetensors dtype (BF16 is decoded by hand).
DTYPES = {"F64": (8, "d"), "F32": (4, "f"), "BF16": (2, None), "I64": (8, "q"),
          "I32": (4, "i"), "BOOL": (1, "?"), "F16": (2, "e"), "U8": (1, "B"), "I8": (1, "b")}


def fail(path, what):
    sys.exit(f"{path}: {what}")


def decode(dtype, raw, count):
    size, code = DTYPES[dtype]
    raw = raw[: count * size]
    if dtype == "BF16":  # the high half of an f32
        return [struct.unpack("<f", b"\0\0" + raw[i:i + 2])[0] for i in range(0, len(raw), 2)]
    return list(struct.unpack("<" + code * (len(raw) // size), raw))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file")
    ap.add_argument("--values", type=int, default=4, help="values to print per tensor")
    args = ap.parse_args()
    with open(args.file, "rb") as f:
        data = f.read()
    if len(data) < 8:
        fail(args.file, f"{len(data)} bytes, shorter than the header length")
    (n,) = struct.unpack("<Q", data[:8])
    if n > len(data) - 8:
        fail(args.file, f"header length {n} exceeds the file")
    header = json.loads(data[8:8 + n].decode("utf-8"))
    body = data[8 + n:]
    meta = header.pop("__metadata__", {})
    ranges = []
    for name, e in header.items():
        size, _ = DTYPES.get(e["dtype"], (None, None))
        if size is None:
            fail(args.file, f"tensor {name!r}: unknown dtype {e['dtype']}")
        numel = 1
        for d in e["shape"]:
            numel *= d
        begin, end = e["data_offsets"]
        if end - begin != numel * size or end > len(body):
            fail(args.file, f"tensor {name!r}: bad data_offsets {e['data_offsets']}")
        ranges.append((begin, end, name))
    ranges.sort()
    pos = 0
    for begin, end, name in ranges:
        if begin != pos:
            fail(args.file, f"tensor {name!r} starts at {begin}, expected {pos}")
        pos = end
    if pos != len(body):
        fail(args.file, f"{len(body) - pos} bytes after the last tensor")

    print(f"{args.file}: {len(header)} tensors, {len(body)} data bytes, header {n} bytes")
    for k, v in sorted(meta.items()):
        print(f"  meta {k} = {v}")
    for begin, end, name in ranges:
        e = header[name]
        values = decode(e["dtype"], body[begin:end], args.values)
        shown = ", ".join(f"{v:.6g}" if isinstance(v, float) else str(v) for v in values)
        print(f"  {name:40s} {e['dtype']:4s} {str(e['shape']):16s} [{begin}, {end})  {shown}")
    print("ok: the layout follows the safetensors format")


if __name__ == "__main__":
    main()
