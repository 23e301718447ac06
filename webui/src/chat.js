// The chat tab: a conversation streamed from /v1/chat/completions, rendered
// as sanitised Markdown, with stop, regenerate, sampling settings, and each
// reply's TTFT, TPOT, tokens and tokens/s as the browser measured them.
import { authHeaders, errorText, readSse } from './api.js';
import { renderMarkdown } from './markdown.js';
import { formatNumber } from './stats.js';

const $ = (id) => document.getElementById(id);

let history = [];          // {role, content} sent so far (replies included)
let controller = null;     // the running request's AbortController

function settings() {
  const body = {
    temperature: Number($('s-temperature').value),
    top_p: Number($('s-top-p').value),
    max_tokens: Number($('s-max-tokens').value),
  };
  if ($('s-seed').value !== '') body.seed = Number($('s-seed').value);
  const stop = $('s-stop').value.split('\n').filter((s) => s.length > 0);
  if (stop.length) body.stop = stop.slice(0, 4);
  return body;
}

function addMessage(role, text) {
  const item = document.createElement('article');
  item.className = `message ${role}`;
  item.setAttribute('aria-label', role === 'user' ? 'Your message' : 'Reply');
  const who = document.createElement('h3');
  who.className = 'who';
  who.textContent = role === 'user' ? 'You' : 'ridge';
  const content = document.createElement('div');
  content.className = 'content';
  if (role === 'user') content.textContent = text; else renderMarkdown(content, text);
  const stats = document.createElement('p');
  stats.className = 'reply-stats muted';
  item.append(who, content, stats);
  $('messages').append(item);
  item.scrollIntoView({ block: 'end' });
  return { item, content, stats };
}

function setBusy(busy) {
  $('send').disabled = busy;
  $('stop').disabled = !busy;
  $('regenerate').disabled = busy || !history.some((m) => m.role === 'assistant');
}

// Streams one reply to `history`; appends it to the history when done.
async function streamReply() {
  $('chat-error').textContent = '';
  const view = addMessage('assistant', '');
  view.item.setAttribute('aria-busy', 'true');
  const system = $('s-system').value.trim();
  const messages = system ? [{ role: 'system', content: system }, ...history] : [...history];
  controller = new AbortController();
  setBusy(true);
  const sent = performance.now();
  let first = null;
  let last = null;
  let text = '';
  let tokens = 0;
  let usageTokens = null;
  let finish = null;
  let pending = false;
  const paint = () => {
    pending = false;
    renderMarkdown(view.content, text);
  };
  try {
    const res = await fetch('/v1/chat/completions', {
      method: 'POST',
      headers: authHeaders({ 'Content-Type': 'application/json' }),
      body: JSON.stringify({ messages, stream: true, stream_options: { include_usage: true }, ...settings() }),
      signal: controller.signal,
    });
    if (!res.ok) throw new Error(await errorText(res));
    await readSse(res, (_name, data) => {
      if (data === '[DONE]') return;
      const chunk = JSON.parse(data);
      if (chunk.error) throw new Error(chunk.error.message);
      if (chunk.usage) usageTokens = chunk.usage.completion_tokens;
      const choice = chunk.choices && chunk.choices[0];
      if (!choice) return;
      if (choice.finish_reason) finish = choice.finish_reason;
      const piece = choice.delta && choice.delta.content;
      if (piece) {
        const now = performance.now();
        if (first === null) first = now;
        last = now;
        tokens += 1;
        text += piece;
        if (!pending) { pending = true; requestAnimationFrame(paint); }
      }
    });
  } catch (e) {
    if (e.name === 'AbortError') finish = 'stopped';
    else $('chat-error').textContent = e.message;
  } finally {
    controller = null;
    paint();
    view.item.removeAttribute('aria-busy');
    const n = usageTokens ?? tokens;
    const ttft = first === null ? null : first - sent;
    const tpot = n > 1 && last !== null ? (last - first) / (n - 1) : null;
    const seconds = last === null ? null : (last - sent) / 1000;
    view.stats.textContent = [
      `TTFT ${ttft === null ? '–' : `${formatNumber(ttft)} ms`}`,
      `TPOT ${tpot === null ? '–' : `${formatNumber(tpot)} ms`}`,
      `${n} tokens`,
      `${seconds ? formatNumber(n / seconds) : '–'} tokens/s`,
      finish ? `finish: ${finish}` : '',
    ].filter(Boolean).join(' · ');
    view.item.dataset.tokens = String(n);
    view.item.dataset.finish = finish || '';
    if (text) history.push({ role: 'assistant', content: text });
    setBusy(false);
  }
}

async function send(event) {
  event.preventDefault();
  const prompt = $('prompt').value;
  if (!prompt.trim() || controller) return;
  $('prompt').value = '';
  history.push({ role: 'user', content: prompt });
  addMessage('user', prompt);
  await streamReply();
}

async function regenerate() {
  if (controller) return;
  // Drop the last reply (from the history and the page) and ask again.
  if (history.length && history[history.length - 1].role === 'assistant') history.pop();
  const replies = $('messages').querySelectorAll('.message.assistant');
  if (replies.length) replies[replies.length - 1].remove();
  await streamReply();
}

export function initChat() {
  $('chat-form').addEventListener('submit', send);
  $('prompt').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); $('chat-form').requestSubmit(); }
  });
  $('stop').addEventListener('click', () => controller && controller.abort());
  $('regenerate').addEventListener('click', regenerate);
  $('clear').addEventListener('click', () => {
    if (controller) controller.abort();
    history = [];
    $('messages').replaceChildren();
    setBusy(false);
  });
  setBusy(false);
}
