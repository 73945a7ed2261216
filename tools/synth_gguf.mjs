// synth_gguf.mjs OUT [dim layers ffn heads kv_heads vocab] -- write a llama-architecture GGUF
// with random Q8_0 weights, for throughput benchmarks only (the text it generates is noise).
// Default shape is 0.5B-class (Qwen2.5-0.5B's transformer widths: dim 896, 24 layers, FFN 4864,
// 14 heads, 2 KV heads) with a 512-token SentencePiece-style vocabulary (<unk> <s> </s>, the 256
// byte tokens, then filler pieces), so prompts tokenize through byte fallback.
// GGUF v3 layout and Q8_0 block layout (f16 scale + 32 int8) as in docs/gguf.md.
import fs from 'node:fs';
import crypto from 'node:crypto';

const [out, ...shape] = process.argv.slice(2);
if (!out) {
  console.error('usage: synth_gguf.mjs OUT [dim layers ffn heads kv_heads vocab]');
  process.exit(2);
}
const [dim, layers, ffn, heads, kvHeads, vocab] =
  [896, 24, 4864, 14, 2, 512].map((d, i) => Number(shape[i] ?? d));
const headDim = dim / heads;
const GGUF_ALIGN = 32;                       // general.alignment default
const T_F32 = 0, T_Q8_0 = 8;                 // ggml tensor types
const Q8_BLOCK = 32, Q8_BYTES = 34;          // elements / bytes per Q8_0 block
const V = { U32: 4, I32: 5, F32: 6, BOOL: 7, STR: 8, ARR: 9 };   // GGUF value types
// Q8_0 scale as an f16 bit pattern: 2^-10, so weights are in (-0.125, 0.125).
const Q8_SCALE_F16 = 0x1400;

const parts = [];
const u32 = (v) => { const b = Buffer.alloc(4); b.writeUInt32LE(v); parts.push(b); };
const i32 = (v) => { const b = Buffer.alloc(4); b.writeInt32LE(v); parts.push(b); };
const u64 = (v) => { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); parts.push(b); };
const f32 = (v) => { const b = Buffer.alloc(4); b.writeFloatLE(v); parts.push(b); };
const str = (s) => { const b = Buffer.from(s, 'utf8'); u64(b.length); parts.push(b); };

const tokens = ['<unk>', '<s>', '</s>'];
for (let i = 0; i < 256; i++) tokens.push(`<0x${i.toString(16).toUpperCase().padStart(2, '0')}>`);
const letters = 'abcdefghijklmnopqrstuvwxyz';
for (let i = 0; tokens.length < vocab; i++)
  tokens.push('\u2581' + letters[i % 26] + (i >= 26 ? letters[Math.floor(i / 26) % 26] : ''));
const ttype = tokens.map((_, i) => (i === 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1));

const kv = [
  ['general.architecture', V.STR, 'llama'],
  ['general.name', V.STR, `synthetic-${dim}x${layers}`],
  ['llama.context_length', V.U32, 4096],
  ['llama.embedding_length', V.U32, dim],
  ['llama.block_count', V.U32, layers],
  ['llama.feed_forward_length', V.U32, ffn],
  ['llama.attention.head_count', V.U32, heads],
  ['llama.attention.head_count_kv', V.U32, kvHeads],
  ['llama.rope.dimension_count', V.U32, headDim],
  ['llama.attention.layer_norm_rms_epsilon', V.F32, 1e-5],
  ['tokenizer.ggml.model', V.STR, 'llama'],
  ['tokenizer.ggml.tokens', V.ARR, [V.STR, tokens]],
  ['tokenizer.ggml.scores', V.ARR, [V.F32, tokens.map((_, i) => (i < 259 ? 0 : -i))]],
  ['tokenizer.ggml.token_type', V.ARR, [V.I32, ttype]],
  ['tokenizer.ggml.bos_token_id', V.U32, 1],
  ['tokenizer.ggml.eos_token_id', V.U32, 2],
  ['tokenizer.ggml.unknown_token_id', V.U32, 0],
  ['tokenizer.ggml.add_bos_token', V.BOOL, true],
];

const tensors = [];   // [name, ne (cols first), type]
const mat = (name, rows, cols) => tensors.push([name, [cols, rows], T_Q8_0]);
const vec = (name, n) => tensors.push([name, [n], T_F32]);
mat('token_embd.weight', vocab, dim);
vec('output_norm.weight', dim);
mat('output.weight', vocab, dim);
for (let l = 0; l < layers; l++) {
  vec(`blk.${l}.attn_norm.weight`, dim);
  mat(`blk.${l}.attn_q.weight`, heads * headDim, dim);
  mat(`blk.${l}.attn_k.weight`, kvHeads * headDim, dim);
  mat(`blk.${l}.attn_v.weight`, kvHeads * headDim, dim);
  mat(`blk.${l}.attn_output.weight`, dim, heads * headDim);
  vec(`blk.${l}.ffn_norm.weight`, dim);
  mat(`blk.${l}.ffn_gate.weight`, ffn, dim);
  mat(`blk.${l}.ffn_up.weight`, ffn, dim);
  mat(`blk.${l}.ffn_down.weight`, dim, ffn);
}
const nbytes = ([ne, , type]) => {
  const n = ne.reduce((a, b) => a * b, 1);
  return type === T_F32 ? 4 * n : (n / Q8_BLOCK) * Q8_BYTES;
};
const align = (x) => Math.ceil(x / GGUF_ALIGN) * GGUF_ALIGN;

parts.push(Buffer.from('GGUF', 'ascii'));
u32(3);
u64(tensors.length);
u64(kv.length);
for (const [key, type, val] of kv) {
  str(key);
  u32(type);
  if (type === V.STR) str(val);
  else if (type === V.U32) u32(val);
  else if (type === V.F32) f32(val);
  else if (type === V.BOOL) parts.push(Buffer.from([val ? 1 : 0]));
  else {
    const [et, arr] = val;
    u32(et);
    u64(arr.length);
    for (const e of arr) (et === V.STR ? str : et === V.F32 ? f32 : i32)(e);
  }
}
let off = 0;
const offsets = [];
for (const t of tensors) {
  const [name, ne, type] = [t[0], t[1], t[2]];
  str(name);
  u32(ne.length);
  for (const d of ne) u64(d);
  u32(type);
  u64(off);
  offsets.push(off);
  off = align(off + nbytes([ne, 0, type]));
}
let header = Buffer.concat(parts);
header = Buffer.concat([header, Buffer.alloc(align(header.length) - header.length)]);

const fd = fs.openSync(out, 'w');
fs.writeSync(fd, header);
let written = 0;
for (let i = 0; i < tensors.length; i++) {
  const [, ne, type] = tensors[i];
  const size = nbytes([ne, 0, type]);
  let data;
  if (type === T_F32) {
    data = Buffer.alloc(size);
    for (let k = 0; k < size; k += 4) data.writeFloatLE(1.0, k);
  } else {
    data = crypto.randomBytes(size);
    for (let k = 0; k < size; k += Q8_BYTES) data.writeUInt16LE(Q8_SCALE_F16, k);
  }
  if (written < offsets[i]) fs.writeSync(fd, Buffer.alloc(offsets[i] - written));
  fs.writeSync(fd, data);
  written = offsets[i] + size;
}
fs.closeSync(fd);
console.log(`${out}: llama ${dim} x ${layers} layers, ffn ${ffn}, heads ${heads}/${kvHeads}, ` +
            `vocab ${vocab}, ${(header.length + written) / 1e6} MB`);
