#!/usr/bin/env python3
"""Writes the seed corpus for tests/fuzz/fuzz_safetensors.c into tests/fuzz/safetensors/.

Valid files follow the layout of the Python safetensors library (8-byte little-endian header
length, JSON header padded with spaces to a multiple of 8, then the data); invalid files each
break one rule the reader checks, so the fuzzer starts next to every error path. Standard library
only and deterministic: rerunning it rewrites the same bytes.

    python3 tests/fuzz/make_safetensors_corpus.py [output_dir]
"""
import json
import os
import struct
import sys

DTYPE_SIZES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
               "U8": 1, "BOOL": 1}


def pack(header_text, data=b"", pad=True):
    """The file bytes for a header given as text (so invalid JSON can be written too)."""
    raw = header_text.encode("utf-8") if isinstance(header_text, str) else header_text
    if pad:
        raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + data


def tensors(entries, metadata=None):
    """entries: (name, dtype, shape); data laid out contiguously, filled with a byte pattern."""
    header, offset = {}, 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, dtype, shape in entries:
        count = 1
        for dim in shape:
            count *= dim
        nbytes = count * DTYPE_SIZES[dtype]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    data = bytes((i * 37 + 11) & 0xFF for i in range(offset))
    return json.dumps(header, separators=(",", ":")), data


def entry(dtype="F32", shape=(2,), offsets=(0, 8)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offsets)}


def one(name_or_value, value=None):
    """Header with one key: one(value) uses the name "w"."""
    if value is None:
        name_or_value, value = "w", name_or_value
    return json.dumps({name_or_value: value}, separators=(",", ":"))


def corpus():
    files = {}
    # Valid: what the Python library writes for typical checkpoints.
    files["valid_simple"] = pack(*tensors([("a", "F32", [2])]))
    files["valid_all_dtypes"] = pack(*tensors(
        [(f"t_{d.lower()}", d, [2, 3]) for d in DTYPE_SIZES], metadata={"format": "pt"}))
    files["valid_bn"] = pack(*tensors(
        [("bn1.num_batches_tracked", "I64", []), ("bn1.weight", "F32", [4]),
         ("bn1.bias", "F32", [4]), ("conv1.weight", "F16", [4, 3, 1, 1])],
        metadata={"format": "pt", "epoch": "2"}))
    files["valid_empty_and_scalars"] = pack(*tensors(
        [("s", "F64", []), ("e0", "F32", [0]), ("e1", "I16", [3, 0, 2]), ("b", "BOOL", [])]))
    files["valid_max_dims"] = pack(*tensors([("d8", "U8", [1, 2, 1, 2, 1, 2, 1, 2])]))
    files["valid_no_tensors"] = pack("{}")
    files["valid_metadata_only"] = pack(json.dumps({"__metadata__": {"format": "pt"}}))
    files["valid_overlap"] = pack(json.dumps({"a": entry(), "b": entry("I32")}), bytes(8))
    files["valid_unpadded_trailing_data"] = pack(one(entry("U8", [3], [2, 5])), bytes(16), pad=False)
    files["valid_unicode_name"] = pack(*tensors([("na\u00efve.\u6743\u91cd", "BF16", [2])]))

    # Invalid: one broken rule each.
    files["bad_short"] = b"\x10\x00\x00"
    files["bad_len_beyond_file"] = struct.pack("<Q", 4096) + b"{}"
    files["bad_len_too_large"] = struct.pack("<Q", 100_000_001) + b"{}      "
    files["bad_not_json"] = pack("{\"a\":")
    files["bad_not_object"] = pack("[1,2,3]")
    files["bad_trailing"] = pack("{}x")
    files["bad_utf8"] = pack(b"{\"\xff\":1}")
    files["bad_entry_not_object"] = pack(one([1, 2]))
    files["bad_missing_dtype"] = pack(one({"shape": [2], "data_offsets": [0, 8]}), bytes(8))
    files["bad_dtype_type"] = pack(one(entry(dtype=4)), bytes(8))
    files["bad_unknown_dtype"] = pack(one(entry(dtype="F8_E4M3", offsets=(0, 2))), bytes(8))
    files["bad_ndim"] = pack(one(entry("U8", [1] * 9, (0, 1))), bytes(1))
    files["bad_negative_dim"] = pack(one(entry(shape=(-2,))), bytes(8))
    files["bad_float_dim"] = pack(one(entry(shape=(2.5,))), bytes(8))
    files["bad_huge_dim"] = pack(one(entry(shape=(2 ** 60,))), bytes(8))
    files["bad_long_name"] = pack(*tensors([("n" * 256, "U8", [1])]))
    files["bad_duplicate"] = pack('{"a":%s,"a":%s}' % (json.dumps(entry()), json.dumps(entry())), bytes(8))
    files["bad_begin_after_end"] = pack(one(entry(offsets=(8, 0))), bytes(8))
    files["bad_end_beyond_data"] = pack(one(entry(offsets=(0, 8))), bytes(4))
    files["bad_size_mismatch"] = pack(one(entry(shape=(2, 3))), bytes(8))
    files["bad_overflow"] = pack(one(entry("F64", [2 ** 32] * 3, (0, 8))), bytes(8))
    files["bad_offsets_shape"] = pack(one({"dtype": "F32", "shape": [2], "data_offsets": [0]}), bytes(8))
    files["bad_metadata_value"] = pack(json.dumps({"__metadata__": {"epoch": 3}}))
    return files


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(os.path.abspath(__file__)), "safetensors")
    os.makedirs(out, exist_ok=True)
    total = 0
    for name, data in sorted(corpus().items()):
        with open(os.path.join(out, name + ".seed"), "wb") as f:
            f.write(data)
        total += len(data)
    print(f"wrote {len(corpus())} files, {total} bytes, to {out}")


if __name__ == "__main__":
    main()
