#!/usr/bin/env python3
# gguf_tiny.py -- write a tiny one-layer llama GGUF whose matrices are all of one weight type, for
# the `ork pack` round trips of tests/cli/test_pack.sh (types `ork gguf synth` cannot write, and
# small files for those it can). Dim 256 and FFN 512 so every K is a multiple of the 256-weight
# super-blocks of Q4_K/Q6_K; the tokenizer keys are copied from a source GGUF (stories260K).
# Weights are seeded pseudo-random blocks with finite scales: the pack checks the layout and
# the numbers' path through the packer, not what the model says.
# usage: gguf_tiny.py TYPE SOURCE.gguf OUT.gguf     TYPE: f32 f16 bf16 q8_0 q4_0 q4_k q6_k
import random
import struct
import sys

# ggml type ids and block geometry (ggml's ggml_type enum and block structs: GGUF spec)
TYPES = {  # name: (id, weights per block, bytes per block)
    "f32": (0, 1, 4), "f16": (1, 1, 2), "q4_0": (2, 32, 18), "q8_0": (8, 32, 34),
    "q4_k": (12, 256, 144), "q6_k": (14, 256, 210), "bf16": (30, 1, 2),
}
DIM, FFN, HEADS, CTX = 256, 512, 4, 256
ALIGN = 32                      # GGUF default general.alignment
GGUF_STRING, GGUF_ARRAY, GGUF_U32, GGUF_F32 = 8, 9, 4, 6
SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def read_tokenizer_kvs(path):
    """The raw bytes of every tokenizer.* key/value of a GGUF file, and their count."""
    b = open(path, "rb").read()
    assert b[:4] == b"GGUF", "not a GGUF file"
    _, _, n_kv = struct.unpack_from("<IQQ", b, 4)
    off, out, n = 24, bytearray(), 0

    def skip_value(off, t):
        if t == GGUF_STRING:
            (ln,) = struct.unpack_from("<Q", b, off)
            return off + 8 + ln
        if t == GGUF_ARRAY:
            et, cnt = struct.unpack_from("<IQ", b, off)
            off += 12
            if et in SCALAR:
                return off + SCALAR[et] * cnt
            for _ in range(cnt):
                off = skip_value(off, et)
            return off
        return off + SCALAR[t]

    for _ in range(n_kv):
        start = off
        (ln,) = struct.unpack_from("<Q", b, off)
        key = b[off + 8:off + 8 + ln].decode()
        off += 8 + ln
        (t,) = struct.unpack_from("<I", b, off)
        off = skip_value(off + 4, t)
        if key.startswith("tokenizer."):
            out += b[start:off]
            n += 1
    return bytes(out), n


def gstr(s):
    e = s.encode()
    return struct.pack("<Q", len(e)) + e


def kv_u32(k, v):
    return gstr(k) + struct.pack("<II", GGUF_U32, v)


def kv_f32(k, v):
    return gstr(k) + struct.pack("<If", GGUF_F32, v)


def kv_str(k, v):
    return gstr(k) + struct.pack("<I", GGUF_STRING) + gstr(v)


def f16(x):
    return struct.pack("<e", x)


def matrix(rng, typ, rows, cols):
    """rows x cols weights of type typ: small seeded values, finite scales."""
    _, per, size = TYPES[typ]
    n = rows * cols
    if typ == "f32":
        return struct.pack("<%df" % n, *(rng.uniform(-0.05, 0.05) for _ in range(n)))
    if typ == "f16":
        return struct.pack("<%de" % n, *(rng.uniform(-0.05, 0.05) for _ in range(n)))
    if typ == "bf16":   # the top 16 bits of an f32
        f = struct.pack("<%df" % n, *(rng.uniform(-0.05, 0.05) for _ in range(n)))
        out = bytearray(2 * n)
        out[0::2] = f[2::4]
        out[1::2] = f[3::4]
        return bytes(out)
    out = bytearray()
    for _ in range(n // per):
        if typ == "q8_0":
            out += f16(0.0004) + bytes(rng.getrandbits(8) for _ in range(32))
        elif typ == "q4_0":
            out += f16(0.006) + bytes(rng.getrandbits(8) for _ in range(16))
        elif typ == "q4_k":   # d, dmin, 12 bytes of 6-bit scales/mins, 128 bytes of nibbles
            out += f16(0.0005) + f16(0.0005) + bytes(rng.getrandbits(8) for _ in range(140))
        elif typ == "q6_k":   # ql[128], qh[64], int8 scales[16], d
            out += bytes(rng.getrandbits(8) for _ in range(192))
            out += bytes(rng.randrange(1, 64) for _ in range(16)) + f16(0.00005)
    assert len(out) == n // per * size
    return bytes(out)


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in TYPES:
        sys.exit("usage: gguf_tiny.py {%s} SOURCE.gguf OUT.gguf" % "|".join(TYPES))
    typ, src, dst = sys.argv[1:]
    tok, n_tok = read_tokenizer_kvs(src)
    vocab = 512                 # stories260K's vocabulary
    rng = random.Random(1)
    kvs = [kv_str("general.architecture", "llama"), kv_str("general.name", "tiny " + typ),
           kv_u32("general.alignment", ALIGN), kv_u32("llama.context_length", CTX),
           kv_u32("llama.embedding_length", DIM), kv_u32("llama.feed_forward_length", FFN),
           kv_u32("llama.attention.head_count", HEADS),
           kv_u32("llama.attention.head_count_kv", HEADS), kv_u32("llama.block_count", 1),
           kv_u32("llama.rope.dimension_count", DIM // HEADS),
           kv_f32("llama.attention.layer_norm_rms_epsilon", 1e-5)]
    ones = struct.pack("<%df" % DIM, *([1.0] * DIM))
    tensors = [  # name, GGUF dims (cols first), data
        ("token_embd.weight", [DIM, vocab], matrix(rng, typ, vocab, DIM)),
        ("output_norm.weight", [DIM], ones),
        ("output.weight", [DIM, vocab], matrix(rng, typ, vocab, DIM)),
        ("blk.0.attn_norm.weight", [DIM], ones),
        ("blk.0.ffn_norm.weight", [DIM], ones),
    ]
    for nm in ("attn_q", "attn_k", "attn_v", "attn_output"):
        tensors.append(("blk.0.%s.weight" % nm, [DIM, DIM], matrix(rng, typ, DIM, DIM)))
    for nm in ("ffn_gate", "ffn_up"):
        tensors.append(("blk.0.%s.weight" % nm, [DIM, FFN], matrix(rng, typ, FFN, DIM)))
    tensors.append(("blk.0.ffn_down.weight", [FFN, DIM], matrix(rng, typ, DIM, FFN)))
    head = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs) + n_tok)
    head += b"".join(kvs) + tok
    data, infos = bytearray(), bytearray()
    for name, dims, blob in tensors:
        t = TYPES[typ][0] if len(dims) == 2 else TYPES["f32"][0]
        infos += gstr(name) + struct.pack("<I", len(dims))
        infos += struct.pack("<%dQ" % len(dims), *dims) + struct.pack("<IQ", t, len(data))
        data += blob
        data += bytes(-len(data) % ALIGN)
    out = head + bytes(infos)
    out += bytes(-len(out) % ALIGN)
    with open(dst, "wb") as f:
        f.write(out + bytes(data))


if __name__ == "__main__":
    main()
