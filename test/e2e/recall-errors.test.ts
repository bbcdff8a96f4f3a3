/**
 * An upstream that fails the round after a recall, mid-stream (the client's 200 is sent): a
 * rate limit or an overload is asked again by the proxy (the round is its own request) after
 * the wait the upstream names; past that, the door's error event carries the upstream's own
 * error type and code, so an SDK that retries an overloaded or rate-limited API still does.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { DOORS } from '../helpers/doors.js'
import type { RecordedRequest } from '../helpers/fake-upstream.js'
import { loop, proxyOnFake } from '../helpers/proxy.js'

const OWN_ERROR = {
  chat: { type: 'requests', code: 'rate_limit_exceeded' },
  responses: { type: 'requests', code: 'rate_limit_exceeded' },
  messages: { type: 'overloaded_error' },
} as const

/**
 * The status and body the proxy answered `send` with: the door clients refuse a stream that
 * ends in an error (as they should), so the answer is taken as it goes by.
 */
async function rawAnswer(send: () => Promise<unknown>): Promise<{ status: number; raw: string }> {
  const realFetch = globalThis.fetch
  let seen = { status: 0, raw: '' }
  globalThis.fetch = async (...args: Parameters<typeof fetch>) => {
    const response = await realFetch(...args)
    seen = { status: response.status, raw: await response.text() }
    return new Response(seen.raw, { status: response.status, headers: response.headers })
  }
  try {
    await send().catch(() => undefined)
  } finally {
    globalThis.fetch = realFetch
  }
  return seen
}

/** The model's first answers: a call of the agent's Bash, then a recall of its result. */
function openingTurn(door: (typeof DOORS)[number], request: RecordedRequest, index: number) {
  if (index === 0)
    return door.respond(
      request,
      { calls: [{ id: 'c1', name: 'Bash', args: { command: 'ls' } }] },
      0,
    )
  if (index === 1)
    return door.respond(
      request,
      { calls: [{ id: 'r1', name: 'recall', args: { id: '#0001' } }] },
      1,
    )
  return undefined
}

/** The client asks, runs the Bash call, and sends its result: the request whose round recalls. */
async function recallingClient(door: (typeof DOORS)[number], url: string, stream: boolean) {
  const client = door.client({ stream })
  client.user('list the files')
  const first = await client.send(url)
  client.results(first.calls, ['a.ts\nb.ts'])
  return client
}

describe('the round after a recall fails, streaming', () => {
  const fixture = proxyOnFake()

  for (const door of DOORS)
    test(`${door.name}: a wait past the longest is not waited for: the error event carries the upstream's own error`, async () => {
      const own = OWN_ERROR[door.name]
      const status = door.name === 'messages' ? 529 : 429
      const body =
        door.name === 'messages'
          ? { type: 'error', error: { type: own.type, message: 'Overloaded' } }
          : { error: { message: 'Rate limit reached', param: null, ...own } }
      fixture.upstream.setScript((request, index) => {
        const opening = openingTurn(door, request, index)
        if (opening) return opening
        const wait = String(loop.proxy.recall.round_retry.max_wait_ms / 1000 + 1)
        return {
          status,
          body: JSON.stringify(body),
          headers: { 'content-type': 'application/json', 'retry-after': wait },
        }
      })
      fixture.upstream.requests.length = 0
      const client = await recallingClient(door, fixture.proxy.url, true)
      const failed = await rawAnswer(() => client.send(fixture.proxy.url))
      assert.equal(fixture.upstream.requests.length, 3, 'the recall was answered and sent on')
      assert.equal(failed.status, 200)
      if (door.name === 'messages')
        assert.match(
          failed.raw,
          /event: error\ndata: \{"type":"error","error":\{"type":"overloaded_error","message":"Overloaded"\}\}/,
        )
      else if (door.name === 'chat')
        assert.match(
          failed.raw,
          /data: \{"error":\{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"\}\}/,
        )
      else
        assert.match(
          failed.raw,
          /"status":"failed","error":\{"code":"rate_limit_exceeded","message":"Rate limit reached"\}/,
        )
    })

  test("responses: a chat server's {error} in the stream ends it as the door's failure, no `event: undefined`", async () => {
    const door = DOORS.find((d) => d.name === 'responses')!
    const own = { message: 'boom', type: 'server_error', code: 'busy' }
    fixture.upstream.setScript(() => ({ sse: [{ error: own }], done: false }))
    const client = door.client({ stream: true })
    client.user('hi')
    const failed = await rawAnswer(() => client.send(fixture.proxy.url))
    assert.doesNotMatch(failed.raw, /event: undefined/)
    assert.match(
      failed.raw,
      /event: response\.failed\n.*"error":\{"code":"busy","message":"boom"\}/,
    )
  })
})

describe('the round after a recall is rate-limited or overloaded', () => {
  const fixture = proxyOnFake()
  const retry = loop.proxy.recall.round_retry

  for (const door of DOORS)
    for (const stream of [true, false])
      test(`${door.name}${stream ? ', streaming' : ''}: asked again after the wait it names; the answer comes whole`, async () => {
        const failing = door.name === 'messages' ? 529 : 429
        // The round after the recall fails twice (Retry-After 0, then retry-after-ms 30), then answers.
        const refusals: Record<string, string>[] = [
          { 'retry-after': '0' },
          { 'retry-after-ms': '30' },
        ]
        fixture.upstream.setScript((request, index) => {
          const opening = openingTurn(door, request, index)
          if (opening) return opening
          const refusal = refusals[index - 2]
          if (refusal)
            return {
              status: failing,
              body: JSON.stringify({ error: { message: 'slow down', type: 'requests' } }),
              headers: { 'content-type': 'application/json', ...refusal },
            }
          return door.respond(request, { text: 'The files are a.ts and b.ts.' }, index)
        })
        fixture.upstream.requests.length = 0
        const client = await recallingClient(door, fixture.proxy.url, stream)
        const answer = await client.send(fixture.proxy.url)
        assert.equal(answer.status, 200, answer.raw)
        assert.equal(answer.text, 'The files are a.ts and b.ts.')
        assert.deepEqual(answer.calls, [])
        const sent = fixture.upstream.requests
        assert.equal(sent.length, 5, 'the hidden round three times')
        // The same bytes each time: the round as it was, asked again.
        assert.equal(sent[3]!.body, sent[2]!.body)
        assert.equal(sent[4]!.body, sent[2]!.body)
      })

  test('chat: past the attempts, the error event', async () => {
    const door = DOORS.find((d) => d.name === 'chat')!
    fixture.upstream.setScript((request, index) => {
      const opening = openingTurn(door, request, index)
      if (opening) return opening
      return {
        status: 503,
        body: JSON.stringify({ error: { message: 'try later', type: 'server_error' } }),
        headers: { 'content-type': 'application/json', 'retry-after-ms': '5' },
      }
    })
    fixture.upstream.requests.length = 0
    const client = await recallingClient(door, fixture.proxy.url, true)
    const failed = await rawAnswer(() => client.send(fixture.proxy.url))
    assert.equal(failed.status, 200)
    assert.match(failed.raw, /data: \{"error":\{"message":"try later"/)
    assert.equal(fixture.upstream.requests.length, 3 + retry.attempts)
  })
})
