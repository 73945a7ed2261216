// webui.mjs ORK MODEL NPM_PREFIX -- the built-in web chat page in a real browser: headless
// Chromium (the system's, driven by playwright-core) loads GET /, types a message, clicks Send,
// and sees the streamed reply appear in pieces (the bubble grows while the stream runs), the
// tokens/s status, Stop ending a reply early, Clear emptying the conversation, the system
// prompt reaching the request; with --api-key the page asks for the key and works once it is
// typed; with --no-webui GET / is 404. The page loads nothing from elsewhere (every request
// the browser makes goes to the server).
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { check, deadline, finish, startServer, get, rawRequest } from './harness.mjs';

const [ork, model, prefix, chromium] = process.argv.slice(2);
deadline(100);
const require = createRequire(prefix + '/node_modules/');
const { chromium: pw } = require('playwright-core');

const profile = mkdtempSync(join(tmpdir(), 'ork-webui-'));
process.on('exit', () => rmSync(profile, { recursive: true, force: true }));
// an empty profile of its own (playwright passes it as --user-data-dir)
const browser = await pw.launchPersistentContext(profile, {
  executablePath: chromium, headless: true, timeout: 30000,
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
         '--disable-component-update', '--disable-sync', '--no-first-run'],
});

const srv = await startServer(ork, model, ['-np', '2', '-t', '1']);
{ // the page itself
  const r = await get(srv, '/');
  check('GET /: 200 text/html', r.status === 200 && /^text\/html/.test(r.headers.get('content-type')), r.status);
  check('GET /: a CSP that forbids other origins', /default-src 'none'/.test(r.headers.get('content-security-policy') ?? '') &&
        /connect-src 'self'/.test(r.headers.get('content-security-policy') ?? ''), r.headers.get('content-security-policy'));
  await originChecks(srv);
  check('GET /: no external URL in the page', !/(src|href)\s*=\s*["']?(https?:)?\/\//i.test(r.text) && !/@import/.test(r.text), null);
}

// Wait for fn in the page; on a timeout fail with what the page shows, and end the test.
async function waitUntil(page, what, fn, ms) {
  try {
    await page.waitForFunction(fn, null, { timeout: ms });
  } catch (e) {
    const shown = await page.evaluate(() => [document.getElementById('info').textContent,
      document.getElementById('log').innerText, document.getElementById('status').textContent]);
    check(what, false, { error: String(e).slice(0, 100), shown });
    finish();
  }
}

// The page's own origin is accepted without --cors-origin when the Host is an address literal
// or localhost; a host name in both headers (a DNS-rebinding page) is still refused.
async function originChecks(s) {
  const body = '{"messages":[{"role":"user","content":"hi"}],"max_tokens":2}';
  const req = (host, origin) => rawRequest(s.port, `POST /v1/chat/completions HTTP/1.1\r\nHost: ${host}\r\n` +
    `Origin: ${origin}\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
  const p = s.port;
  for (const [host, want] of [[`127.0.0.1:${p}`, 200], [`localhost:${p}`, 200], [`[::1]:${p}`, 200],
                              [`evil.example:${p}`, 403], [`127.0.0.1.evil.example:${p}`, 403]]) {
    const r = await req(host, `http://${host}`);
    check(`origin http://${host} with Host ${host}: ${want}`, r.status === want, r.status);
  }
  const other = await req(`127.0.0.1:${p}`, `http://127.0.0.1:${p + 1}`);
  check('an origin other than the Host: 403', other.status === 403, other.status);
}

// The server writes a stories260K reply in a few milliseconds, and a loaded machine may hand
// the page all of its events in one read, so the bubble would grow once however well the page
// streams. Inside the page, before its scripts run, fetch's event-stream bodies are passed on
// one SSE event ("data: ...\n\n") per macrotask, PACE_MS apart: what the page does with
// separate events is then what the test sees, whatever the network coalesced.
const PACE_MS = 5;
async function paceEventStreams(page) {
  await page.addInitScript((ms) => {
    const real = window.fetch;
    window.fetch = async (...args) => {
      const r = await real(...args);
      if (!r.body || !(r.headers.get('content-type') || '').startsWith('text/event-stream')) return r;
      const reader = r.body.getReader(), enc = new TextEncoder(), dec = new TextDecoder();
      let buf = '';
      const body = new ReadableStream({
        async pull(ctl) {
          for (;;) {
            const i = buf.indexOf('\n\n');
            if (i >= 0) {
              const ev = buf.slice(0, i + 2);
              buf = buf.slice(i + 2);
              await new Promise((res) => setTimeout(res, ms));
              ctl.enqueue(enc.encode(ev));
              return;
            }
            const { done, value } = await reader.read();
            if (done) {
              if (buf) ctl.enqueue(enc.encode(buf));
              buf = '';
              ctl.close();
              return;
            }
            buf += dec.decode(value, { stream: true });
          }
        },
        cancel(reason) { return reader.cancel(reason); },
      });
      return new Response(body, { status: r.status, statusText: r.statusText, headers: r.headers });
    };
  }, PACE_MS);
}

async function openPage(base) {
  const page = await browser.newPage();
  await paceEventStreams(page);
  page.setDefaultTimeout(10000);
  const foreign = [], errors = [];
  page.on('request', (q) => { if (!q.url().startsWith(base)) foreign.push(q.url()); });
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(base + '/', { waitUntil: 'load' });
  return { page, foreign, errors };
}

{
  const { page, foreign, errors } = await openPage(srv.base);
  await page.waitForFunction(() => /stories260K/.test(document.getElementById('info').textContent), 10000);
  check('page shows the model and the device', /stories260K\.gguf.*device cpu/.test(await page.textContent('#info')),
        await page.textContent('#info'));
  // capture the request the page sends
  let sent = null;
  page.on('request', (q) => { if (q.url().endsWith('/v1/chat/completions')) sent = JSON.parse(q.postData()); });
  await page.click('#settings summary');   // open the settings
  await page.fill('#system', 'You tell stories.');
  await page.dispatchEvent('#system', 'change');
  await page.fill('#maxtok', '200');
  await page.dispatchEvent('#maxtok', 'change');
  await page.fill('#input', 'Once upon a time');
  // record the reply's length each time it changes, from inside the page
  await page.evaluate(() => {
    window.__lens = [];
    new MutationObserver(() => {
      const b = document.querySelector('.msg.assistant');
      if (b) window.__lens.push(b.textContent.length);
    }).observe(document.getElementById('log'), { subtree: true, childList: true, characterData: true });
  });
  await page.click('#send');
  await waitUntil(page, 'the reply completes', () => document.querySelector('.msg.assistant') && !document.querySelector('.streaming') &&
                             !document.getElementById('send').disabled, 30000);
  const reply = await page.textContent('.msg.assistant');
  const lens = await page.evaluate(() => window.__lens);
  check('a reply appears', reply.length > 20, reply);
  check('the reply was streamed (it grew in several steps)', new Set(lens).size >= 3, lens.slice(0, 20));
  check('the user message is shown', (await page.textContent('.msg.user')) === 'Once upon a time', null);
  check('the request streams, with the system prompt first', sent?.stream === true &&
        sent?.messages?.[0]?.role === 'system' && sent.messages[0].content === 'You tell stories.' &&
        sent.messages[1]?.content === 'Once upon a time' && sent.max_tokens === 200, sent);
  check('tokens/s shown', /tokens\/s/.test(await page.textContent('#status')), await page.textContent('#status'));

  // a second turn carries the history; Stop ends it early
  await page.fill('#maxtok', '100000');
  await page.dispatchEvent('#maxtok', 'change');
  await page.fill('#input', 'And then?');
  // Send, and Stop as soon as the first piece of the reply shows (inside the page: no delay)
  await page.evaluate(() => new Promise((resolve) => {
    const obs = new MutationObserver(() => {
      const b = document.querySelectorAll('.msg.assistant')[1];
      if (b && b.textContent.length > 0) {
        obs.disconnect();
        document.getElementById('stop').click();
        resolve();
      }
    });
    obs.observe(document.getElementById('log'), { subtree: true, childList: true, characterData: true });
    document.getElementById('send').click();
  }));
  await waitUntil(page, 'Stop ends the stream', () => !document.querySelector('.streaming') &&
                  !document.getElementById('send').disabled, 10000);
  check('second turn sends the history', sent?.messages?.length === 4 && sent.messages[2].role === 'assistant' &&
        sent.messages[2].content === reply, sent?.messages?.map((m) => m.role));
  check('Stop ends the reply', /stopped/.test(await page.textContent('#status')), await page.textContent('#status'));
  check('the stopped reply is kept', (await page.$$('.msg.assistant')).length === 2, null);
  await page.click('#clear');
  check('Clear empties the conversation', (await page.$$('.msg')).length === 0, null);
  check('no request left the server', foreign.length === 0, foreign);
  check('no script errors', errors.length === 0, errors);
  await page.close();
}
await srv.stop();

{ // --api-key: the page asks for it
  const s2 = await startServer(ork, model, ['-t', '1', '--api-key', 'sekrit']);
  const { page } = await openPage(s2.base);
  await page.waitForFunction(() => /API key/.test(document.getElementById('info').textContent), 10000);
  check('api key: the page asks for the key', await page.evaluate(() => document.getElementById('settings').open), null);
  await page.fill('#apikey', 'sekrit');
  await page.dispatchEvent('#apikey', 'change');
  await page.fill('#maxtok', '24');
  await page.dispatchEvent('#maxtok', 'change');
  await page.fill('#input', 'Hello');
  await page.click('#send');
  await page.waitForFunction(() => document.querySelector('.msg.assistant') && !document.querySelector('.streaming'),
                             null, { timeout: 20000 });
  check('api key: a reply once the key is typed', (await page.textContent('.msg.assistant')).length > 0 &&
        (await page.$$('.msg.error')).length === 0, await page.textContent('#log'));
  await page.close();
  await s2.stop();
}
{ // --no-webui
  const s3 = await startServer(ork, model, ['-t', '1', '--no-webui']);
  const r = await get(s3, '/');
  check('--no-webui: GET / is 404', r.status === 404 && /--no-webui/.test(r.json?.error?.message), r.text);
  await s3.stop();
}
await browser.close();
finish();
