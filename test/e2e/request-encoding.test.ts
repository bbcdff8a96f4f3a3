/**
 * Request bodies sent compressed (`Content-Encoding`), as the Codex CLI signed in with ChatGPT
 * sends its Responses bodies (zstd) and other clients gzip theirs: on every door the proxy
 * decodes the body, shapes it like a plain one (the next request on the fast path, the history
 * byte-identical), and sends it plain; a broken or oversized one is refused in the door's shape;
 * a coding this node cannot undo goes upstream as it came, coding and all.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import * as zlib from 'node:zlib'
import { createLogger } from '../../src/log.js'
import { createStore, type Store } from '../../src/store/index.js'
import { DOORS, type Door } from '../helpers/doors.js'
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js'
import { startProxy, type TestProxy } from '../helpers/proxy.js'

const zstdCompress = (zlib as { zstdCompressSync?: (bytes: Buffer) => Buffer }).zstdCompressSync

/** Each coding a client may send, and how to make it (zstd where this node has it). */
const CODINGS: Record<string, (bytes: Buffer) => Buffer> = {
  gzip: (bytes) => zlib.gzipSync(bytes),
  deflate: (bytes) => zlib.deflateSync(bytes),
  br: (bytes) => zlib.brotliCompressSync(bytes),
  ...(zstdCompress ? { zstd: zstdCompress } : {}),
}

const SCHEMA = { type: 'object', properties: { command: { type: 'string' } } }
const LISTING = Array.from({ length: 40 }, (_, i) => `src/file-${i}.ts`).join('\n')
const TESTS = Array.from({ length: 30 }, (_, i) => `ok ${i} - test ${i}`).join('\n')

/** A request with tool results (one for each of `outputs`), in the door's own shape. */
function body(door: Door['name'], outputs: readonly string[]): Record<string, unknown> {
  const calls = outputs.map((_, i) => ({ id: `call_${i}`, command: i === 0 ? 'ls' : 'npm test' }))
  if (door === 'chat')
    return {
      model: 'm',
      tools: [{ type: 'function', function: { name: 'Bash', parameters: SCHEMA } }],
      messages: [
        { role: 'system', content: 'You are a coding agent.' },
        { role: 'user', content: 'Look around.' },
        ...calls.flatMap((call, i) => [
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              {
                id: call.id,
                type: 'function',
                function: { name: 'Bash', arguments: JSON.stringify({ command: call.command }) },
              },
            ],
          },
          { role: 'tool', tool_call_id: call.id, content: outputs[i] },
        ]),
      ],
    }
  if (door === 'responses')
    return {
      model: 'm',
      instructions: 'You are a coding agent.',
      tools: [{ type: 'function', name: 'Bash', parameters: SCHEMA }],
      input: [
        { type: 'message', role: 'user', content: 'Look around.' },
        ...calls.flatMap((call, i) => [
          {
            type: 'function_call',
            call_id: call.id,
            name: 'Bash',
            arguments: JSON.stringify({ command: call.command }),
          },
          { type: 'function_call_output', call_id: call.id, output: outputs[i] },
        ]),
      ],
    }
  return {
    model: 'm',
    max_tokens: 100,
    system: 'You are a coding agent.',
    tools: [{ name: 'Bash', input_schema: SCHEMA }],
    messages: [
      { role: 'user', content: 'Look around.' },
      ...calls.flatMap((call, i) => [
        {
          role: 'assistant',
          content: [
            { type: 'tool_use', id: call.id, name: 'Bash', input: { command: call.command } },
          ],
        },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: call.id, content: outputs[i] }],
        },
      ]),
    ],
  }
}

describe('compressed request bodies', () => {
  let upstream: FakeUpstream
  let store: Store
  let proxy: TestProxy
  let dir: string
  const lines: string[] = []
  before(async () => {
    upstream = await startFakeUpstream()
    upstream.setScript((request, n) => {
      const door = DOORS.find((d) => request.pathname.endsWith(d.upstreamPath)) ?? DOORS[0]!
      return door.respond(request, { text: 'done' }, n)
    })
    dir = mkdtempSync(join(tmpdir(), 'lembas-encoding-'))
    store = await createStore(`sqlite:${join(dir, 'store.db')}`, { idleTtlMs: 86_400_000 })
    proxy = await startProxy({
      upstreamUrl: upstream.url,
      store,
      maxBodyBytes: 1024 * 1024,
      log: createLogger('info', (line) => lines.push(line)),
    })
  })
  after(async () => {
    await proxy.close()
    await upstream.close()
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  })

  const post = (door: Door, bytes: Buffer, headers: Record<string, string>) =>
    fetch(proxy.url + '/v1' + door.upstreamPath, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer k', ...headers },
      body: bytes,
    })

  for (const door of DOORS) {
    for (const [coding, compress] of Object.entries(CODINGS)) {
      test(`${door.name}: a ${coding} body is shaped, goes on the fast path, and goes upstream plain`, async () => {
        const session = `${door.name}-${coding}`
        const headers = { 'content-encoding': coding, 'x-session-id': session }
        const sent = upstream.requests.length
        const requests = lines.length
        for (const outputs of [[LISTING], [LISTING, TESTS]]) {
          const plain = Buffer.from(JSON.stringify(body(door.name, outputs)))
          const response = await post(door, compress(plain), headers)
          assert.equal(response.status, 200, await response.clone().text())
          await response.text()
        }
        const [first, second] = upstream.requests.slice(sent)
        for (const request of [first!, second!]) {
          assert.equal(request.headers['content-encoding'], undefined, 'the body goes plain')
          assert.ok(request.json, 'the upstream got JSON')
        }
        const [listing] = door.results(first!)
        const [again, tests] = door.results(second!)
        assert.match(listing!, /^\[#0001\]/, 'the result has its id: the body was shaped')
        assert.equal(again, listing, 'the first result went again as it was sent')
        assert.match(tests!, /^\[#0002\]/)
        const logged = lines
          .slice(requests)
          .map((line) => JSON.parse(line))
          .filter((event) => event.event === 'request')
        assert.deepEqual(
          logged.map((event) => event.spliced),
          [0, 1],
          'the second request went on from the first',
        )
      })
    }

    test(`${door.name}: a broken body and one too large once decoded are refused in its shape`, async () => {
      const sent = upstream.requests.length
      const broken = await post(door, Buffer.from('not gzip at all'), {
        'content-encoding': 'gzip',
      })
      assert.equal(broken.status, 400)
      const brokenJson = (await broken.json()) as { error: { type: string; message: string } }
      assert.equal(brokenJson.error.type, 'invalid_request_error')
      assert.match(brokenJson.error.message, /not valid gzip/)
      // Two megabytes of one character compress to a few kilobytes: a body over the limit.
      const padded = { ...body(door.name, [LISTING]), pad: 'x'.repeat(2 * 1024 * 1024) }
      const bomb = zlib.gzipSync(Buffer.from(JSON.stringify(padded)))
      assert.ok(bomb.length < 64 * 1024)
      const large = await post(door, bomb, { 'content-encoding': 'gzip' })
      assert.equal(large.status, 413)
      const largeJson = (await large.json()) as { error: { message: string } }
      assert.match(largeJson.error.message, /once decoded from gzip/)
      // deflate as well: a zlib stream past the limit is not then taken for a raw one.
      const deflated = await post(door, zlib.deflateSync(Buffer.from(JSON.stringify(padded))), {
        'content-encoding': 'deflate',
      })
      assert.equal(deflated.status, 413)
      assert.equal(upstream.requests.length, sent, 'nothing reached the upstream')
    })

    test(`${door.name}: a coding the proxy cannot undo goes upstream as it came`, async () => {
      const codings = zstdCompress ? ['compress'] : ['compress', 'zstd']
      for (const coding of codings) {
        const sent = upstream.requests.length
        const bytes = Buffer.from(JSON.stringify(body(door.name, [LISTING])))
        const response = await post(door, bytes, { 'content-encoding': coding })
        assert.equal(response.status, 200)
        await response.text()
        const [forwarded] = upstream.requests.slice(sent)
        assert.equal(forwarded!.headers['content-encoding'], coding)
        assert.equal(forwarded!.body, bytes.toString(), 'the bytes as the client sent them')
      }
      const warned = lines.map((line) => JSON.parse(line))
      assert.ok(warned.some((event) => event.event === 'request-encoding-forwarded'))
    })
  }

  test('where the client’s own bytes go (no tools, --observe), they go coded, as they came', async () => {
    const observer = await startProxy({ upstreamUrl: upstream.url, store, observe: true })
    try {
      for (const [url, request] of [
        [proxy.url, { model: 'm', messages: [{ role: 'user', content: 'no tools' }] }],
        [observer.url, body('chat', [LISTING])],
      ] as const) {
        const sent = upstream.requests.length
        const bytes = zlib.gzipSync(Buffer.from(JSON.stringify(request)))
        const response = await fetch(url + '/v1/chat/completions', {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
          body: bytes,
        })
        assert.equal(response.status, 200)
        await response.text()
        const [forwarded] = upstream.requests.slice(sent)
        assert.equal(forwarded!.headers['content-encoding'], 'gzip')
        assert.equal(forwarded!.body, bytes.toString(), 'the bytes as the client sent them')
      }
    } finally {
      await observer.close()
    }
  })

  test('a coded body to a route the proxy only forwards keeps its coding', async () => {
    const sent = upstream.requests.length
    const bytes = zlib.gzipSync(Buffer.from(JSON.stringify({ model: 'm', input: 'compact me' })))
    const response = await fetch(proxy.url + '/v1/responses/compact', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      body: bytes,
    })
    await response.text()
    const [forwarded] = upstream.requests.slice(sent)
    assert.equal(forwarded!.headers['content-encoding'], 'gzip')
    // The fake keeps bodies as UTF-8 text: the same bytes read the same.
    assert.equal(forwarded!.body, bytes.toString(), 'the bytes as the client sent them')
  })
})
