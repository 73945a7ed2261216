#!/usr/bin/env python3
"""gen_gguf_corpus.py -- write the seed corpus of the GGUF fuzz target (tests/fuzz/corpus/gguf/).

Small valid GGUF v2/v3 files covering every metadata type, nested arrays, several tensor types
and alignments, plus one file per kind of corruption the reader must reject. Layout facts from
the GGUF specification (little-endian; see src/engine/gguf.c). Deterministic: rerunning it
rewrites identical files. The corpus's found_* files (inputs that reached new code while
fuzzing, merged with libFuzzer -merge=1 -use_counters=0) and regress_* files (inputs that once
failed) are not generated here and are left alone.

usage: tools/gen_gguf_corpus.py [OUT_DIR]     (default: tests/fuzz/corpus/gguf)
"""
import os
import struct
import sys

U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
SCALAR_FMT = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32: "f", BOOL: "B",
              U64: "Q", I64: "q", F64: "d"}
# GGML tensor types used here: id -> (block elements, block bytes)
GGML = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q8_0": (8, 32, 34),
        "Q4_K": (12, 256, 144), "I8": (24, 1, 1)}


def s(x):
    b = x.encode() if isinstance(x, str) else x
    return struct.pack("<Q", len(b)) + b


def value(t, v):
    if t == STR:
        return s(v)
    if t == ARR:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(value(et, i) for i in items)
    return struct.pack("<" + SCALAR_FMT[t], v)


def kv(key, t, v):
    return s(key) + struct.pack("<I", t) + value(t, v)


def build(kvs, tensors, version=3, align=32, n_kv=None, n_tensors=None, data=None):
    """tensors: (name, dims, type name, offset or None = next aligned). Returns bytes."""
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors) if n_tensors is None else n_tensors,
                                len(kvs) if n_kv is None else n_kv)
    out += b"".join(kvs)
    off, sizes = 0, []
    infos = b""
    for name, dims, tname, toff in tensors:
        tid, blk, bb = GGML[tname]
        n = 1
        for d in dims:
            n *= d
        size = n // blk * bb
        if toff is None:
            toff = off
        off = (max(off, toff + size) + align - 1) // align * align
        sizes.append((toff, size))
        infos += s(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        infos += struct.pack("<IQ", tid, toff)
    out += infos
    if tensors:
        out += b"\0" * ((-len(out)) % align)
        end = max(o + z for o, z in sizes)
        out += bytes((i * 37 + 11) & 0xFF for i in range(end)) if data is None else data
    return out


def all_types_kvs():
    return [
        kv("general.architecture", STR, "llama"), kv("k.u8", U8, 200), kv("k.i8", I8, -5),
        kv("k.u16", U16, 60000), kv("k.i16", I16, -300), kv("k.u32", U32, 7), kv("k.i32", I32, -7),
        kv("k.f32", F32, 0.5), kv("k.bool", BOOL, 1), kv("k.u64", U64, 2**63), kv("k.i64", I64, -2**40),
        kv("k.f64", F64, 3.25), kv("k.str", STR, "h\u00e9llo\n"),
        kv("k.arr.f32", ARR, (F32, [0.0, -1.5, 2.0])), kv("k.arr.bool", ARR, (BOOL, [0, 1])),
        kv("k.arr.str", ARR, (STR, ["<s>", "", "\u2581the"])),
        kv("k.arr.nested", ARR, (ARR, [(I32, [1, 2]), (ARR, [(U8, [9])]), (STR, ["x"])])),
    ]


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(__file__), "..", "tests", "fuzz", "corpus", "gguf")
    os.makedirs(out_dir, exist_ok=True)
    model_kvs = [kv("general.architecture", STR, "llama"), kv("general.alignment", U32, 32),
                 kv("llama.block_count", U32, 1), kv("llama.embedding_length", U32, 32)]
    model_tensors = [("token_embd.weight", [32, 4], "F32", None), ("blk.0.attn_q.weight", [32, 2], "Q8_0", None),
                     ("blk.0.ffn_down.weight", [256], "Q4_K", None), ("output_norm.weight", [32], "F16", None),
                     ("rope", [2, 1, 1, 3], "I8", None)]
    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % i for i in range(8)] + ["\u2581a", "b", "c"]
    files = {
        "valid_model_v3.gguf": build(model_kvs, model_tensors),
        "valid_model_v2.gguf": build(model_kvs, model_tensors, version=2),
        "valid_all_types.gguf": build(all_types_kvs(), [("t", [4], "F32", None)]),
        "valid_align64.gguf": build([kv("general.alignment", U32, 64)],
                                    [("a", [3], "F32", None), ("b", [32], "Q4_0", None)], align=64),
        "valid_vocab.gguf": build([kv("tokenizer.ggml.model", STR, "llama"),
                                   kv("tokenizer.ggml.tokens", ARR, (STR, tokens)),
                                   kv("tokenizer.ggml.scores", ARR, (F32, [float(-i) for i in range(len(tokens))])),
                                   kv("tokenizer.ggml.token_type", ARR, (I32, [2, 3, 3] + [6] * 8 + [1] * 3))], []),
        "valid_empty.gguf": build([], []),
        "bad_magic.gguf": b"GGUX" + build(model_kvs, [])[4:],
        "bad_version1.gguf": build([], [], version=1),
        "bad_version_bigendian.gguf": build([], [], version=0x03000000),
        "bad_header_truncated.gguf": build(model_kvs, [])[:20],
        "bad_nkv_absurd.gguf": build(model_kvs, [], n_kv=2**63),
        "bad_ntensors_absurd.gguf": build(model_kvs, [], n_tensors=2**40),
        "bad_strlen.gguf": build([s("general.name") + struct.pack("<IQ", STR, 2**62) + b"abc"], []),
        "bad_value_type.gguf": build([s("k") + struct.pack("<I", 13) + b"\0" * 8], []),
        "bad_bool.gguf": build([kv("k", U8, 2)[:-5] + struct.pack("<IB", BOOL, 2)], []),
        "bad_arr_len.gguf": build([s("k") + struct.pack("<IIQ", ARR, F32, 2**62) + b"\0" * 16], []),
        "bad_str_arr_len.gguf": build([s("k") + struct.pack("<IIQ", ARR, STR, 2**40) + s("a")], []),
        "bad_nested_deep.gguf": build([s("deep") + struct.pack("<I", ARR) + struct.pack("<IQ", ARR, 1) * 9
                                       + struct.pack("<IQ", U8, 1) + b"\1"], []),
        "bad_dup_key.gguf": build([kv("a", U32, 1), kv("a", U32, 2)], []),
        "bad_align_pow2.gguf": build([kv("general.alignment", U32, 48)], [("t", [4], "F32", None)], align=48),
        "bad_align_type.gguf": build([kv("general.alignment", U64, 32)], [("t", [4], "F32", None)]),
        "bad_ndims.gguf": build([], [("t", [1, 1, 1, 1, 4], "F32", None)]),
        "bad_ne_zero.gguf": build([], [("t", [4, 0], "F32", 0)], data=b"\0" * 32),
        "bad_tensor_type.gguf": build([], [("t", [4], "F32", None)]).replace(
            b"\x04" + b"\0" * 7 + struct.pack("<IQ", 0, 0), b"\x04" + b"\0" * 7 + struct.pack("<IQ", 4, 0), 1),
        "bad_block.gguf": build([], [("t", [33], "Q8_0", 0)], data=b"\0" * 64),
        "bad_offset_unaligned.gguf": build([], [("t", [4], "F32", 8)]),
        "bad_offset_past_end.gguf": build([], [("t", [4], "F32", 4096)], data=b"\0" * 64),
        "bad_overlap.gguf": build([], [("a", [16], "F32", 0), ("b", [16], "F32", 32)]),
        "bad_dup_tensor.gguf": build([], [("w", [8], "F32", None), ("w", [8], "F32", None)]),
        "bad_data_truncated.gguf": build(model_kvs, model_tensors)[:-1],
    }
    total = 0
    for name, data in sorted(files.items()):
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(data)
        total += len(data)
    print(f"wrote {len(files)} files, {total} bytes, to {out_dir}")


if __name__ == "__main__":
    main()
