// Calls to the server: the API key (kept for this tab only) and a reader of
// server-sent events over fetch (EventSource cannot send the key).

const keyInput = () => document.getElementById('api-key');

export function authHeaders(extra = {}) {
  const key = keyInput().value.trim();
  return key ? { ...extra, Authorization: `Bearer ${key}` } : extra;
}

export function initApiKey() {
  const input = keyInput();
  input.value = sessionStorage.getItem('ridge-api-key') || '';
  document.getElementById('key-form').addEventListener('submit', (e) => {
    e.preventDefault();
    input.dispatchEvent(new Event('change'));
  });
  input.addEventListener('change', () => {
    sessionStorage.setItem('ridge-api-key', input.value.trim());
    input.dispatchEvent(new CustomEvent('ridge-key-changed', { bubbles: true }));
  });
}

// The message of an OpenAI error response, or the status line.
export async function errorText(res) {
  try {
    const body = await res.json();
    if (body && body.error && body.error.message) return `${res.status}: ${body.error.message}`;
  } catch (_) { /* not JSON */ }
  return `${res.status} ${res.statusText}`;
}

// Reads an SSE body, calling onEvent(name, data) per event ("message" when
// unnamed); comments (": ping") are skipped. Resolves when the body ends.
export async function readSse(res, onEvent) {
  const reader = res.body.getReader();
  const decoder = new TextDecoder();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let name = 'message';
      const data = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) name = line.slice(6).trim();
        else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
      }
      if (data.length) onEvent(name, data.join('\n'));
    }
  }
}
