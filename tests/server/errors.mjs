// errors.mjs ORK MODEL -- every kind of bad request gets its 4xx status and an error in the OpenAI
// shape {"error": {"code", "message", "type"}}, and the next good request still succeeds.
import { execFileSync, spawnSync } from 'node:child_process';
import { check, deadline, finish, startServer, post, get } from './harness.mjs';

const [ork, model] = process.argv.slice(2);
deadline(50);

// CLI: an unknown device is a clear usage error, before anything is loaded; every device name
// of `ork run` is accepted, and --device npu without a board fails naming the missing NPU (on a
// board it serves until the timeout).
const badDev = spawnSync(ork, ['serve', '-m', model, '--device', 'bogus'], { encoding: 'utf8', timeout: 10000 });
check('--device bogus: exit 2 with a clear message', badDev.status === 2 &&
      badDev.stderr.includes("invalid value 'bogus' for --device"), badDev.stderr);
const dev = spawnSync(ork, ['serve', '-m', model, '--device', 'npu', '--port', '0'],
                      { encoding: 'utf8', timeout: 10000 });
check('--device npu: accepted; no NPU is named', !dev.stderr.includes('not available in this build') &&
      (dev.status === 1 ? dev.stderr.includes('no RK3588 NPU found') : dev.signal !== null), dev.stderr);
const help = spawnSync(ork, ['serve', '--help'], { encoding: 'utf8', timeout: 10000 });
check('serve --help', help.status === 0 && help.stdout.includes('--parallel'), help.stdout);

const srv = await startServer(ork, model, ['-c', '64', '-t', '1']);
const good = { prompt: 'Once upon a time', n_predict: 8, temperature: 0 };
const goodRef = (await post(srv, '/completion', good)).json?.content;
check('baseline request', typeof goodRef === 'string' && goodRef.length > 0);

async function expectError(name, path, body, status, match) {
  const r = await post(srv, path, body);
  const e = r.json?.error;
  check(`${name}: ${status}`, r.status === status && e && e.code === status &&
        typeof e.message === 'string' && typeof e.type === 'string' &&
        (!match || e.message.includes(match)), [r.status, r.text]);
  const ok = await post(srv, '/completion', good);
  check(`${name}: next request succeeds`, ok.status === 200 && ok.json?.content === goodRef, ok.text);
}

await expectError('malformed JSON', '/completion', '{"prompt": "x", ', 400, 'malformed JSON');
await expectError('trailing garbage', '/completion', '{"prompt": "x"} xyz', 400, 'trailing');
await expectError('not an object', '/v1/completions', '[1,2,3]', 400, 'JSON object');
await expectError('empty body', '/completion', '', 400, 'empty');
await expectError('missing prompt', '/completion', { n_predict: 3 }, 400, "'prompt' is required");
await expectError('prompt of wrong type', '/completion', { prompt: 5 }, 400, "'prompt'");
await expectError('n_predict of wrong type', '/completion', { prompt: 'a', n_predict: 'x' }, 400, "'n_predict'");
await expectError('n_predict fractional', '/completion', { prompt: 'a', n_predict: 2.5 }, 400, "'n_predict'");
await expectError('n_predict below -1', '/completion', { prompt: 'a', n_predict: -5 }, 400, 'out of range');
await expectError('n_predict too large', '/completion', { prompt: 'a', n_predict: 1e9 }, 400, 'out of range');
await expectError('max_tokens too large', '/v1/completions', { prompt: 'a', max_tokens: 1e9 }, 400, 'max_tokens');
await expectError('temperature of wrong type', '/completion', { prompt: 'a', temperature: 'hot' }, 400, 'temperature');
await expectError('top_p out of range', '/completion', { prompt: 'a', top_p: 3 }, 400, 'top_p');
await expectError('stream not a boolean', '/completion', { prompt: 'a', stream: 'yes' }, 400, 'stream');
await expectError('stop of wrong type', '/completion', { prompt: 'a', stop: 7 }, 400, 'stop');
await expectError('token id outside the vocabulary', '/completion', { prompt: [1, 999999] }, 400, 'vocabulary');
await expectError('negative token id', '/detokenize', { tokens: [-1] }, 400, 'vocabulary');
await expectError('messages not an array', '/v1/chat/completions', { messages: 'hi' }, 400, 'messages');
await expectError('message without role', '/v1/chat/completions', { messages: [{ content: 'hi' }] }, 400, 'role');
await expectError('unknown role', '/v1/chat/completions', { messages: [{ role: 'wizard', content: 'hi' }] }, 400, 'role');
await expectError('n out of range', '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], n: 99 }, 400, "'n'");
await expectError('tokenize without content', '/tokenize', { text: 'a' }, 400, 'content');
await expectError('prompt longer than the context', '/completion',
                  { prompt: 'Once upon a time there was a dog. '.repeat(20) }, 400, 'context size');
await expectError('deep nesting', '/completion', '['.repeat(5000) + ']'.repeat(5000), 400, 'nested');

// invalid UTF-8 inside a JSON string (raw bytes 0xC3 0x28)
const bad = Buffer.concat([Buffer.from('{"prompt": "ab'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]);
await expectError('invalid UTF-8', '/completion', new Uint8Array(bad), 400, 'UTF-8');
// a lone surrogate escape decodes to invalid UTF-8
await expectError('lone surrogate escape', '/completion', '{"prompt": "a\\ud800b"}', 400, null);

// oversized body: 413 (limit 1 MiB)
await expectError('oversized body', '/completion', JSON.stringify({ prompt: 'x'.repeat(2 << 20) }), 413, 'larger than');

// unknown fields are ignored
let r = await post(srv, '/completion', { ...good, frobnicate: { deeply: [1, 2] }, mirostat: 0 });
check('unknown fields are ignored', r.status === 200 && r.json?.content === goodRef, r.text);
r = await post(srv, '/completion', { ...good, seed: -1, temperature: 0 });
check('seed -1 means random', r.status === 200, r.text);

// routing errors
r = await get(srv, '/nope');
check('unknown path: 404', r.status === 404 && r.json?.error?.type === 'not_found_error', r.text);
r = await get(srv, '/completion');
check('wrong method: 405', r.status === 405 && r.json?.error?.code === 405, r.text);
r = await post(srv, '/completion', good);
check('still serving after everything', r.status === 200 && r.json?.content === goodRef);

const ex = await srv.stop('SIGINT');
check('SIGINT: exit status 0', ex.code === 0, ex);
finish();
