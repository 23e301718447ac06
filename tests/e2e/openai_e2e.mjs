// End-to-end: the official `openai` npm client against `ridge serve`.
//
//   node openai_e2e.mjs RIDGE_BINARY SHARED_DIR WORK_DIR
//
// Converts stories260K with `ridge convert`, starts `ridge serve` on a free
// port with an API key, then runs completions and chat, streaming and not,
// through the client (plus logprobs, stop strings, structured output parsed by
// the client, and the client's error classes), and finally stops the server
// with SIGTERM, which must exit 0.
// Any failed check exits non-zero; CTest treats that as a failure.
import OpenAI from 'openai';
import assert from 'node:assert/strict';
import fs from 'node:fs';

import { convertStories, startServer } from './ridge_server.mjs';

const [ridge, sharedArg, workDir] = process.argv.slice(2);
if (!ridge || !sharedArg || !workDir) {
  console.error('usage: node openai_e2e.mjs RIDGE_BINARY SHARED_DIR WORK_DIR');
  process.exit(2);
}
const shared = process.env.RIDGE_SHARED_DIR || sharedArg;
const apiKey = 'sk-ridge-e2e';
const modelName = 'stories260K';

// The whole run must end in bounded time, whatever hangs.
const watchdog = setTimeout(() => {
  console.error('e2e: timed out');
  process.exit(3);
}, 240_000);

fs.mkdirSync(workDir, { recursive: true });
const gguf = convertStories(ridge, shared, workDir);
const { process: server, port, exited: serverExit } = await startServer(
    ridge, ['-m', gguf, '--threads', '2', '--kv-memory', '64MiB', '--api-key', apiKey, '--model-name', modelName]);
console.log(`e2e: ridge serve on port ${port}`);

const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey, maxRetries: 0, timeout: 60_000 });
let checks = 0;
async function check(name, fn) {
  await fn();
  ++checks;
  console.log(`ok - ${name}`);
}

try {
  await check('models.list', async () => {
    const models = [];
    for await (const m of client.models.list()) models.push(m.id);
    assert.deepEqual(models, [modelName]);
  });

  const prompt = 'Once upon a time';
  let completionText = '';
  await check('completions.create', async () => {
    const r = await client.completions.create({ model: modelName, prompt, max_tokens: 24, temperature: 0 });
    assert.equal(r.object, 'text_completion');
    assert.equal(r.choices.length, 1);
    completionText = r.choices[0].text;
    assert.ok(completionText.length > 0, 'empty completion');
    assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
    assert.ok(r.usage.prompt_tokens > 0);
    assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  });

  await check('completions.create stream', async () => {
    const stream = await client.completions.create({
      model: modelName, prompt, max_tokens: 24, temperature: 0, stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let finish = null;
    let usage = null;
    let chunks = 0;
    for await (const chunk of stream) {
      ++chunks;
      if (chunk.usage) usage = chunk.usage;
      if (chunk.choices.length > 0) {
        text += chunk.choices[0].text;
        if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
      }
    }
    assert.equal(text, completionText, 'streamed text differs from the non-streamed one');
    assert.ok(chunks >= 2);  // tokens that arrive while a chunk is written share the next one
    assert.ok(finish);
    assert.ok(usage && usage.completion_tokens > 0);
  });

  const messages = [
    { role: 'system', content: 'You tell short stories.' },
    { role: 'user', content: 'Tell me about a cat.' },
  ];
  let chatText = '';
  await check('chat.completions.create', async () => {
    const r = await client.chat.completions.create({ model: modelName, messages, max_tokens: 20, temperature: 0 });
    assert.equal(r.object, 'chat.completion');
    assert.equal(r.choices[0].message.role, 'assistant');
    chatText = r.choices[0].message.content;
    assert.equal(typeof chatText, 'string');
    assert.ok(chatText.length > 0);
    assert.ok(r.usage.completion_tokens > 0);
  });

  await check('chat.completions.create stream', async () => {
    const stream = await client.chat.completions.create({
      model: modelName, messages, max_tokens: 20, temperature: 0, stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let role = null;
    let finish = null;
    let usage = null;
    for await (const chunk of stream) {
      if (chunk.usage) usage = chunk.usage;
      if (chunk.choices.length === 0) continue;
      const delta = chunk.choices[0].delta;
      if (delta.role) role = delta.role;
      if (delta.content) text += delta.content;
      if (chunk.choices[0].finish_reason) finish = chunk.choices[0].finish_reason;
    }
    assert.equal(role, 'assistant');
    assert.equal(text, chatText, 'streamed chat differs from the non-streamed one');
    assert.ok(['stop', 'length'].includes(finish));
    assert.ok(usage && usage.total_tokens > 0);
  });

  await check('chat logprobs', async () => {
    const r = await client.chat.completions.create({
      model: modelName, messages, max_tokens: 5, logprobs: true, top_logprobs: 2,
    });
    const content = r.choices[0].logprobs.content;
    assert.equal(content.length, r.usage.completion_tokens);
    for (const entry of content) {
      assert.ok(entry.logprob <= 0);
      assert.equal(entry.top_logprobs.length, 2);
    }
  });

  await check('stop string', async () => {
    const words = completionText.trim().split(' ');
    assert.ok(words.length >= 3, completionText);
    const stop = ' ' + words[2];
    const r = await client.completions.create({ model: modelName, prompt, max_tokens: 24, temperature: 0, stop });
    assert.equal(r.choices[0].finish_reason, 'stop');
    assert.equal(r.choices[0].text, completionText.slice(0, completionText.indexOf(stop)));
  });

  await check('chat.completions.parse with a JSON schema (structured output)', async () => {
    const schema = {
      type: 'object',
      properties: { name: { type: 'string', maxLength: 10 }, age: { type: 'integer', minimum: 1, maximum: 9 } },
      required: ['name', 'age'], additionalProperties: false,
    };
    const r = await client.chat.completions.parse({
      model: modelName, messages, max_tokens: 100, temperature: 0,
      response_format: { type: 'json_schema', json_schema: { name: 'cat', schema, strict: true } },
    });
    const parsed = r.choices[0].message.parsed;
    assert.deepEqual(Object.keys(parsed), ['name', 'age']);
    assert.equal(typeof parsed.name, 'string');
    assert.ok(parsed.name.length <= 10, parsed.name);
    assert.ok(Number.isInteger(parsed.age) && parsed.age >= 1 && parsed.age <= 9, String(parsed.age));
    await assert.rejects(
      client.chat.completions.create({
        model: modelName, messages,
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema: { type: 'string', format: 'uri' } } },
      }),
      (e) => e instanceof OpenAI.BadRequestError && e.param === 'response_format.json_schema.schema' &&
             e.message.includes("format \"uri\" is not supported"));
  });

  // Tool calling: the tiny model is forced to call (tool_choice names a
  // function, or 'required'), its arguments constrained to the function's
  // JSON Schema; the call goes back as an assistant turn with the tool's
  // result, and the model answers.
  const tools = [
    { type: 'function', function: { name: 'get_weather',
      parameters: { type: 'object', properties: { city: { type: 'string', maxLength: 12 },
                                                   days: { type: 'integer', minimum: 1, maximum: 7 } },
                    required: ['city', 'days'], additionalProperties: false } } },
    { type: 'function', function: { name: 'get_time' } },  // no parameters: the empty object
  ];
  const toolMessages = [{ role: 'user', content: 'Weather?' }];
  const checkWeatherArgs = (text) => {
    const args = JSON.parse(text);
    assert.equal(typeof args.city, 'string');
    assert.ok(Number.isInteger(args.days) && args.days >= 1 && args.days <= 7, text);
    assert.deepEqual(Object.keys(args).sort(), ['city', 'days']);
  };
  let forcedCall = null;
  await check('tools: a named tool_choice forces a valid call', async () => {
    const r = await client.chat.completions.create({
      model: modelName, messages: toolMessages, tools, temperature: 0, max_tokens: 100,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    const choice = r.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls');
    assert.equal(choice.message.content, null);
    assert.equal(choice.message.tool_calls.length, 1);
    forcedCall = choice.message.tool_calls[0];
    assert.equal(forcedCall.type, 'function');
    assert.equal(forcedCall.function.name, 'get_weather');
    assert.ok(forcedCall.id.startsWith('call_'), forcedCall.id);
    checkWeatherArgs(forcedCall.function.arguments);
  });

  await check('tools: the forced call streams as delta.tool_calls', async () => {
    const stream = await client.chat.completions.create({
      model: modelName, messages: toolMessages, tools, temperature: 0, max_tokens: 100, stream: true,
      tool_choice: { type: 'function', function: { name: 'get_weather' } },
    });
    const calls = [];
    let finish = null;
    let argumentChunks = 0;
    for await (const chunk of stream) {
      const choice = chunk.choices[0];
      if (!choice) continue;
      for (const d of choice.delta.tool_calls ?? []) {
        if (!calls[d.index]) calls[d.index] = { id: '', name: '', arguments: '' };
        if (d.id) calls[d.index].id = d.id;
        if (d.function?.name) calls[d.index].name += d.function.name;
        if (d.function?.arguments) {
          calls[d.index].arguments += d.function.arguments;
          ++argumentChunks;
        }
      }
      assert.ok(!choice.delta.content, 'a forced call has no content');
      if (choice.finish_reason) finish = choice.finish_reason;
    }
    assert.equal(finish, 'tool_calls');
    assert.equal(calls.length, 1);
    assert.equal(calls[0].name, 'get_weather');
    assert.equal(calls[0].arguments, forcedCall.function.arguments, 'streamed arguments differ');
    assert.ok(argumentChunks >= 1);
  });

  await check("tools: tool_choice 'required' without parallel calls gives exactly one valid call", async () => {
    const r = await client.chat.completions.create({
      model: modelName, messages: toolMessages, tools, temperature: 1, seed: 7, max_tokens: 150,
      tool_choice: 'required', parallel_tool_calls: false,
    });
    const calls = r.choices[0].message.tool_calls;
    assert.equal(r.choices[0].finish_reason, 'tool_calls');
    assert.equal(calls.length, 1);
    assert.ok(['get_weather', 'get_time'].includes(calls[0].function.name));
    if (calls[0].function.name === 'get_weather') checkWeatherArgs(calls[0].function.arguments);
    else assert.deepEqual(typeof JSON.parse(calls[0].function.arguments), 'object');
  });

  await check('tools: the result goes back and the model answers', async () => {
    // (Without the tools this time: the 512-token context of the tiny model is short.)
    const r = await client.chat.completions.create({
      model: modelName, temperature: 0, max_tokens: 16,
      messages: [
        ...toolMessages,
        { role: 'assistant', content: null, tool_calls: [forcedCall] },
        { role: 'tool', tool_call_id: forcedCall.id, content: 'Sunny, 18 C' },
      ],
    });
    const choice = r.choices[0];
    assert.ok(['stop', 'length'].includes(choice.finish_reason));
    assert.equal(typeof choice.message.content, 'string');
    assert.ok(choice.message.content.length > 0);
    assert.equal(choice.message.tool_calls, undefined);
    // The prompt held the call and its result: more tokens than the question alone.
    const bare = await client.chat.completions.create({ model: modelName, messages: toolMessages, max_tokens: 1 });
    assert.ok(r.usage.prompt_tokens > bare.usage.prompt_tokens + 20, `${r.usage.prompt_tokens}`);
  });

  await check('tools: a malformed tool is a 400 naming it', async () => {
    await assert.rejects(
      client.chat.completions.create({ model: modelName, messages: toolMessages,
                                       tools: [{ type: 'function', function: { name: 'bad name' } }] }),
      (e) => e instanceof OpenAI.BadRequestError && e.param === 'tools[0].function.name');
  });

  await check('errors map to the client classes', async () => {
    await assert.rejects(client.completions.create({ model: 'gpt-4', prompt }),
                         (e) => e instanceof OpenAI.NotFoundError && e.status === 404);
    await assert.rejects(client.completions.create({ model: modelName, prompt, n: 2 }),
                         (e) => e instanceof OpenAI.BadRequestError && e.status === 400 && e.param === 'n');
    await assert.rejects(client.chat.completions.create({ model: modelName, messages, temperature: -1 }),
                         (e) => e instanceof OpenAI.BadRequestError && e.param === 'temperature');
    const wrongKey = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'nope', maxRetries: 0 });
    await assert.rejects(wrongKey.models.list(), (e) => e instanceof OpenAI.AuthenticationError && e.status === 401);
  });
} catch (e) {
  console.error('e2e: FAILED:', e);
  server.kill('SIGKILL');
  process.exit(1);
}

server.kill('SIGTERM');
const { code, signal } = await serverExit;
clearTimeout(watchdog);
if (code !== 0) {
  console.error(`e2e: ridge serve exited with ${code} (signal ${signal}) after SIGTERM`);
  process.exit(1);
}
console.log(`e2e: ${checks} checks passed; ridge serve exited 0 on SIGTERM`);
