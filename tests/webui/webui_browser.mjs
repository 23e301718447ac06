// Browser test of ridge's web page: Debian's headless Chromium driven by
// playwright-core (no browser download) against `ridge serve` on stories260K.
//
//   node webui_browser.mjs RIDGE_BINARY SHARED_DIR WORK_DIR
//
// Checks: the page loads with no console error; a chat message streams a
// reply with its TTFT/TPOT/tokens; the dashboard shows that request's
// timeline and KV blocks, requests holding blocks live in the block map, and
// roofline points; the totals on the page equal /metrics; axe-core finds no
// serious or critical violation on either tab; the tabs and the chat work
// from the keyboard; hostile model output (HTML, <script>, event handlers,
// javascript: links) is shown as text and never runs. Screenshots go to
// WORK_DIR/screenshots. Any failed check exits non-zero.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { chromium } from 'playwright-core';

import { convertStories, startServer } from './ridge_server.mjs';

const [ridge, sharedArg, workDir] = process.argv.slice(2);
if (!ridge || !sharedArg || !workDir) {
  console.error('usage: node webui_browser.mjs RIDGE_BINARY SHARED_DIR WORK_DIR');
  process.exit(2);
}
const shared = process.env.RIDGE_SHARED_DIR || sharedArg;
const chromiumPath = process.env.RIDGE_CHROMIUM || '/usr/bin/chromium';
const apiKey = 'sk-ridge-webui';
const require = createRequire(import.meta.url);
const axeSource = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

const watchdog = setTimeout(() => {
  console.error('webui: timed out');
  process.exit(3);
}, 240_000);

const screenshots = path.join(workDir, 'screenshots');
fs.mkdirSync(screenshots, { recursive: true });
const gguf = convertStories(ridge, shared, workDir);

// A small KV pool (102 blocks of 16 tokens), so that a burst of requests
// queues for blocks and stays long enough in flight to be seen.
const { process: server, port } = await startServer(
    ridge, ['-m', gguf, '--threads', '2', '--kv-memory', '1MiB', '--api-key', apiKey, '--model-name', 'stories260K',
            '--hw', 'h100']);
const base = `http://127.0.0.1:${port}`;
console.log(`webui: ridge serve on ${base}`);

let checks = 0;
async function check(name, fn) {
  await fn();
  checks += 1;
  console.log(`ok - ${name}`);
}

async function metrics() {
  const res = await fetch(`${base}/metrics`, { headers: { Authorization: `Bearer ${apiKey}` } });
  assert.equal(res.status, 200);
  const text = await res.text();
  const value = (name, fragment = '') => {
    for (const line of text.split('\n')) {
      if (line.startsWith('#') || !line.startsWith(name)) continue;
      const next = line[name.length];
      if (next !== '{' && next !== ' ') continue;
      if (fragment && !line.includes(fragment)) continue;
      return Number(line.slice(line.lastIndexOf(' ') + 1));
    }
    return NaN;
  };
  const finished = ['stop', 'length', 'abort', 'error'].reduce((a, r) => a + value('ridge_request_finished_total', `"${r}"`), 0);
  return {
    finished,
    prompt: value('ridge_prompt_tokens_total'),
    generation: value('ridge_generation_tokens_total'),
    blocksTotal: value('ridge_kv_cache_blocks_capacity'),
    blocksUsed: value('ridge_kv_cache_blocks_used'),
  };
}

async function axe(page, what) {
  // Evaluated through the DevTools protocol: the page's Content-Security-Policy forbids inline scripts.
  await page.evaluate(axeSource);
  const result = await page.evaluate(async () => window.axe.run(document, { resultTypes: ['violations'] }));
  const bad = result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert.deepEqual(bad.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(' ')).join(', ')})`), [],
                   `axe-core on the ${what}`);
}

const browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] });
let failed = false;
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
  // The key, as a user types it once: kept for the tab's session.
  await context.addInitScript((key) => sessionStorage.setItem('ridge-api-key', key), apiKey);
  const page = await context.newPage();
  const consoleErrors = [];
  page.on('console', (m) => { if (m.type() === 'error') consoleErrors.push(m.text()); });
  page.on('pageerror', (e) => consoleErrors.push(`page error: ${e.message}`));
  const offsite = [];
  page.on('request', (r) => { if (!r.url().startsWith(base)) offsite.push(r.url()); });

  await check('the page loads, from this server only, with no console error', async () => {
    const res = await page.goto(`${base}/`);
    assert.equal(res.status(), 200);
    await page.getByRole('tab', { name: 'Chat' }).waitFor();
    await page.waitForFunction(() => document.getElementById('dash-status').textContent.startsWith('Connected'));
    assert.deepEqual(consoleErrors, []);
    assert.deepEqual(offsite, []);
  });

  await check('a chat message streams a reply with its TTFT, TPOT, tokens and tokens/s', async () => {
    await page.getByLabel('Max tokens').fill('60');
    await page.getByLabel('Temperature').fill('0');
    await page.getByRole('textbox', { name: 'Message', exact: true }).fill('Once upon a time, there was a little dog');
    await page.getByRole('textbox', { name: 'Message', exact: true }).press('Enter');
    const reply = page.locator('.message.assistant').first();
    await page.locator('.message.assistant[data-finish]').first().waitFor();
    const text = await reply.locator('.content').innerText();
    assert.ok(text.trim().length > 10, `reply: ${text}`);
    const stats = await reply.locator('.reply-stats').innerText();
    assert.match(stats, /TTFT [\d.]+ ms · TPOT [\d.]+ ms · \d+ tokens · [\d.]+ tokens\/s · finish: (stop|length)/);
    const tokens = Number(await reply.getAttribute('data-tokens'));
    assert.ok(tokens > 1 && tokens <= 60, `tokens ${tokens}`);
    await page.screenshot({ path: path.join(screenshots, 'chat.png'), fullPage: true });
  });

  await check('regenerate replaces the last reply with a new one', async () => {
    const before = await page.locator('.message.assistant').first().locator('.content').innerText();
    await page.getByRole('button', { name: 'Regenerate' }).click();
    await page.locator('.message.assistant[data-finish]').first().waitFor();
    assert.equal(await page.locator('.message.assistant').count(), 1);
    assert.equal(await page.locator('.message.user').count(), 1);
    // Greedy sampling (temperature 0) gives the same reply again.
    assert.equal(await page.locator('.message.assistant').first().locator('.content').innerText(), before);
  });

  await check('the chat tab passes axe-core', () => axe(page, 'chat tab'));

  await check('the tabs work from the keyboard', async () => {
    await page.getByRole('tab', { name: 'Chat' }).focus();
    await page.keyboard.press('ArrowRight');
    assert.equal(await page.getByRole('tab', { name: 'Dashboard' }).getAttribute('aria-selected'), 'true');
    assert.ok(await page.locator('#panel-dashboard').isVisible());
    assert.ok(!(await page.locator('#panel-chat').isVisible()));
  });

  await check("the dashboard shows the chat request's timeline and its KV blocks", async () => {
    const row = page.locator('#timelines li', { hasText: 'finished' }).first();
    await row.waitFor();
    const label = await row.innerText();
    const m = label.match(/Request #(\d+) · prompt (\d+) tokens · 1 prefill chunk \((\d+) tokens\)(?: · (\d+) from the prefix cache)? · (\d+) decode steps · finished: (stop|length) · (\d+) tokens · (\d+) KV blocks at the end/);
    assert.ok(m, label);
    const [prompt, prefilled, cached, decodes, output, blocks] = [m[2], m[3], m[4] || 0, m[5], m[7], m[8]].map(Number);
    // Regenerate sent the same prompt again: its full blocks came from the prefix cache (16 tokens each).
    assert.equal(prefilled + cached, prompt, 'every prompt token computed or cached');
    assert.equal(cached, 16 * Math.floor((prompt - 1) / 16), 'its full blocks, all but the last prompt token, from the prefix cache');
    assert.equal(decodes, output - (m[6] === 'length' ? 1 : 0), 'a decode step per token fed back');
    assert.equal(blocks, Math.ceil((prompt + decodes) / 16), 'blocks for every position in the cache');
    assert.ok(await row.locator('rect.prefill').count() >= 1);
    assert.ok(await row.locator('rect.decode').count() >= 1);
  });

  await check('requests in flight hold blocks in the live KV map', async () => {
    // A burst larger than the pool: requests wait for blocks, so snapshots catch them holding some.
    for (let attempt = 0; attempt < 5; attempt += 1) {
      const burst = page.evaluate(async (key) => {
        const one = (i) => fetch('/v1/completions', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${key}` },
          body: JSON.stringify({ prompt: `Once upon a time ${i}`, max_tokens: 400, ignore_eos: true }),
        }).then((r) => r.json());
        return Promise.all(Array.from({ length: 24 }, (_, i) => one(i)));
      }, apiKey);
      // The item itself, read even if the next snapshot has replaced the list since (on a fast machine the
      // burst can end between seeing an item and reading the list again).
      const item = await page.locator('#kv-owners li').first().elementHandle({ timeout: 8000 }).catch(() => null);
      const owner = item ? await item.textContent() : '';
      await burst;
      if (item) {
        assert.match(owner, /#\d+: \d+ blocks \([\d.]+ KiB\)/);
        return;
      }
    }
    assert.fail('no snapshot showed a request holding KV blocks');
  });

  await check('the roofline chart has a point per step', async () => {
    await page.waitForFunction(() => Number(document.getElementById('roofline').dataset.points) > 10);
    const caption = await page.locator('#roofline-summary').innerText();
    assert.match(caption, /\d+ steps plotted; last: [\d.e+-]+ FLOP\/byte/);
    assert.equal(await page.locator('#roofline-chart canvas').count(), 1);
    assert.match(await page.locator('#roofline-hw').innerText(), /H100.*built-in profile h100/);
  });

  await check('the numbers on the page equal /metrics', async () => {
    const m = await metrics();
    assert.ok(m.finished >= 25);
    // The page's last snapshot comes within its interval of the engine going idle. Polled from here:
    // page.waitForFunction evaluates a string, which the page's Content-Security-Policy forbids.
    const want = {
      'total-finished': String(m.finished),
      'total-generation-tokens': String(m.generation),
      'total-prompt-tokens': String(m.prompt),
      'total-kv-blocks': `${m.blocksUsed} / ${m.blocksTotal}`,
    };
    const shownNow = async () => {
      const shown = {};
      for (const id of Object.keys(want)) shown[id] = await page.locator(`#${id}`).textContent();
      return shown;
    };
    let shown = await shownNow();
    for (const deadline = Date.now() + 10000; JSON.stringify(shown) !== JSON.stringify(want) && Date.now() < deadline;) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      shown = await shownNow();
    }
    assert.deepEqual(shown, want, `page totals ${await page.locator('#totals').innerText()} differ from /metrics`);
    const latency = await page.locator('#cap-ttft').innerText();
    assert.match(latency, new RegExp(`TTFT \\(${m.finished} samples\\): P50 [\\d.]+ ms, P95 [\\d.]+ ms, P99 [\\d.]+ ms`));
    assert.match(await page.locator('#goodput').innerText(), new RegExp(`Goodput: \\d+ of ${m.finished} requests`));
    await page.screenshot({ path: path.join(screenshots, 'dashboard.png'), fullPage: true });
  });

  await check('the dashboard tab passes axe-core', () => axe(page, 'dashboard tab'));

  await check('hostile model output is shown as text and never runs', async () => {
    const hostile = [
      'Here is **bold** and a [safe link](https://example.org/).',
      '<script>window.__pwned = "script"</script>',
      '<img src="x" onerror="window.__pwned = \'img\'">',
      '[click me](javascript:window.__pwned=\'link\')',
      '```html\n<b>inside code</b>\n```',
    ].join('\n\n');
    const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 0, model: 'stories260K', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    // The server's reply replaced by one carrying markup, split mid-tag as a stream may be.
    await page.route('**/v1/chat/completions', (route) => route.fulfill({
      status: 200,
      headers: { 'Content-Type': 'text/event-stream' },
      body: chunk({ role: 'assistant', content: '' }) + chunk({ content: hostile.slice(0, 70) })
        + chunk({ content: hostile.slice(70) }) + chunk({}, 'stop') + 'data: [DONE]\n\n',
    }));
    await page.getByRole('tab', { name: 'Chat' }).click();
    const before = await page.locator('.message.assistant').count();
    await page.getByRole('textbox', { name: 'Message', exact: true }).fill('say something dangerous');
    await page.getByRole('button', { name: 'Send' }).click();
    const reply = page.locator('.message.assistant').nth(before);
    await page.locator('.message.assistant[data-finish]').nth(before).waitFor();
    assert.equal(await reply.getAttribute('data-finish'), 'stop');
    await page.waitForTimeout(300);
    assert.equal(await page.evaluate(() => window.__pwned), undefined, 'hostile markup ran');
    const content = reply.locator('.content');
    assert.equal(await content.locator('script, img, iframe, [onerror]').count(), 0);
    const text = await content.innerText();
    assert.ok(text.includes('<script>window.__pwned = "script"</script>'), text);
    assert.ok(text.includes('<img src="x" onerror='), text);
    assert.equal(await content.locator('strong').innerText(), 'bold');
    assert.equal((await content.locator('pre code').innerText()).trim(), '<b>inside code</b>');
    assert.equal(await content.locator('a[href^="javascript"]').count(), 0);
    assert.equal(await content.locator('a[href="https://example.org/"]').getAttribute('rel'), 'noopener noreferrer');
    await page.unroute('**/v1/chat/completions');
  });

  await check('no console error in the whole run', async () => assert.deepEqual(consoleErrors, []));
} catch (e) {
  failed = true;
  console.error(e);
} finally {
  await browser.close();
  server.kill('SIGTERM');
  clearTimeout(watchdog);
}
console.log(`webui: ${checks} checks passed${failed ? ', then one failed' : ''}; screenshots in ${screenshots}`);
process.exit(failed ? 1 : 0);
