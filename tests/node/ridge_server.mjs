// What the Node.js tests (tests/e2e, tests/webui) share: stories260K converted
// to a GGUF with `ridge convert`, and a `ridge serve` on a free port.
import { execFileSync, spawn } from 'node:child_process';
import path from 'node:path';

// Writes WORK_DIR/stories260K.gguf from the llama2.c files in SHARED/models.
export function convertStories(ridge, shared, workDir) {
  const gguf = path.join(workDir, 'stories260K.gguf');
  execFileSync(ridge, ['convert', '--checkpoint', path.join(shared, 'models', 'stories260K.bin'),
                       '--tokenizer', path.join(shared, 'models', 'tok512.bin'), '-o', gguf], { stdio: 'inherit' });
  return gguf;
}

// Starts `ridge serve ARGS --port 0` and resolves once it prints the port it
// listens on. `exited` resolves with {code, signal} when the process ends.
export async function startServer(ridge, args) {
  const server = spawn(ridge, ['serve', ...args, '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  const exited = new Promise((resolve) => server.on('exit', (code, signal) => resolve({ code, signal })));
  const port = await new Promise((resolve, reject) => {
    server.stdout.on('data', (chunk) => {
      output += chunk.toString();
      const m = output.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
      if (m) resolve(Number(m[1]));
    });
    server.on('exit', (code) => reject(new Error(`ridge serve exited early (${code}):\n${output}`)));
  });
  return { process: server, port, exited };
}
