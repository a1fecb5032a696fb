"""Writes a hostile .keras archive for tests/faults/round2/bounds.sh (issue 25).

usage: hostile_keras.py OUT KIND
  bomb         model.weights.h5 inflates to 1.2 GB (1.2 MB in the archive) for a model of 15
               parameters; its headers say so
  understated  the same, its headers saying 1000 bytes
  claims-2gib  a 1 KiB model.weights.h5 whose headers say 2 GiB
  huge-config  config.json inflates to 1.2 GB (a JSON object, then spaces); its headers say 100

The zip is written by hand (APPNOTE.TXT 4.3): the deflate stream of zeros is one full-flushed
block repeated, so a 1.2 GB entry costs no compression time. Only config.json has its CRC; the
other entries' are left 0, as the archive must be refused before any of them is checked.
"""
import struct
import sys
import zlib

CONFIG = (
    '{"module": "keras", "class_name": "Sequential", "config": {"name": "sequential", '
    '"trainable": true, "dtype": {"module": "keras", "class_name": "DTypePolicy", '
    '"config": {"name": "float32"}, "registered_name": null}, "layers": ['
    '{"module": "keras.layers", "class_name": "InputLayer", "config": {"batch_shape": '
    '[null, 4], "dtype": "float32", "name": "input_layer"}, "registered_name": null}, '
    '{"module": "keras.layers", "class_name": "Dense", "config": {"name": "d", "units": 3}, '
    '"registered_name": null}]}, "registered_name": null, "build_config": {"input_shape": null}}'
).encode()


def deflated(prefix, mib=0, fill=b"\0"):
    """A raw deflate stream of `prefix` then `mib` MiB (a multiple of 16) of `fill` bytes, and
    its inflated size."""
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = c.compress(prefix) + c.flush(zlib.Z_FULL_FLUSH)
    block = c.compress(fill * (16 << 20)) + c.flush(zlib.Z_FULL_FLUSH)
    return head + block * (mib // 16) + c.flush(), len(prefix) + (mib << 20)


def write_zip(path, members):
    """members: (name, compressed bytes, size the headers state, CRC-32)."""
    out, central = bytearray(), bytearray()
    for name, data, said, crc in members:
        n = name.encode()
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0x21, crc, len(data), said,
                           len(n), 0) + n + data
        central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0x21, crc,
                               len(data), said, len(n), 0, 0, 0, 0, 0, offset) + n
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central),
                      len(out), 0)
    with open(path, "wb") as f:
        f.write(bytes(out) + bytes(central) + end)


def main():
    out, kind = sys.argv[1], sys.argv[2]
    config = ("config.json",) + deflated(CONFIG) + (zlib.crc32(CONFIG),)
    if kind in ("bomb", "understated"):
        data, size = deflated(b"", 1152)
        write_zip(out, [config, ("model.weights.h5", data, size if kind == "bomb" else 1000, 0)])
    elif kind == "claims-2gib":
        data, _ = deflated(bytes(1024))
        write_zip(out, [config, ("model.weights.h5", data, 2 << 30, 0)])
    elif kind == "huge-config":
        data, _ = deflated(CONFIG, 1152, b" ")
        write_zip(out, [("config.json", data, 100, 0)])
    else:
        sys.exit("hostile_keras.py: unknown kind " + kind)


main()
