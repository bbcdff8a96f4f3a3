/**
 * One proxy for a team's agents: `--upstream-messages` and `--upstream-responses` send those
 * APIs (and every path below them, Claude Code's count_tokens included) to upstreams of their
 * own, everything else to `--upstream`; the start-up line and /healthz name each.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { DOORS } from '../helpers/doors.js'
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js'
import { startProxyCli, stopCli } from '../helpers/cli.js'

test('each door reaches its own upstream; other paths the default; healthz and the start-up line say which', async () => {
  const fakes: Record<string, FakeUpstream> = {}
  for (const door of DOORS)
    fakes[door.name] = await startFakeUpstream((request) =>
      request.pathname.endsWith('/count_tokens')
        ? { json: { input_tokens: 7 } }
        : door.respond(request, { text: `answered by the ${door.name} upstream` }, 1),
    )
  const proxy = await startProxyCli(fakes.chat!.url, 'memory:', [
    '--upstream-messages',
    fakes.messages!.url,
    '--upstream-responses',
    fakes.responses!.url,
  ])
  try {
    assert.match(proxy.stdout, new RegExp(`-> ${fakes.chat!.url}\\n`))
    assert.match(proxy.stdout, new RegExp(`\\n  /v1/messages -> ${fakes.messages!.url}\\n`))
    assert.match(proxy.stdout, new RegExp(`\\n  /v1/responses -> ${fakes.responses!.url}\\n`))
    for (const door of DOORS) {
      for (const stream of [false, true]) {
        const client = door.client({ stream })
        client.user('hi')
        const answer = await client.send(proxy.url)
        assert.equal(answer.status, 200, answer.raw)
        assert.equal(answer.text, `answered by the ${door.name} upstream`)
      }
      // Only its own upstream saw it.
      for (const other of DOORS)
        assert.equal(
          fakes[other.name]!.requests.filter((r) => r.pathname.endsWith(door.upstreamPath)).length,
          other.name === door.name ? 2 : 0,
          `${door.name} requests at the ${other.name} upstream`,
        )
    }
    // The query string goes with a door's request (Claude Code posts /v1/messages?beta=true),
    // plain (no tools) or rebuilt, and so does every recall round's.
    for (const tools of [undefined, [{ name: 'Bash', input_schema: { type: 'object' } }]]) {
      const sent = await fetch(proxy.url + '/v1/messages?beta=true', {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': 'k' },
        body: JSON.stringify({
          model: 'm',
          max_tokens: 5,
          tools,
          messages: [{ role: 'user', content: 'hi' }],
        }),
      })
      assert.equal(sent.status, 200, await sent.text())
      assert.equal(fakes.messages!.requests.at(-1)!.path, '/v1/messages?beta=true')
    }
    // A path below /v1/messages goes with it; any other /v1 path to the default upstream.
    const counted = await fetch(proxy.url + '/v1/messages/count_tokens', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    })
    assert.deepEqual(await counted.json(), { input_tokens: 7 })
    assert.equal(fakes.messages!.requests.at(-1)!.path, '/v1/messages/count_tokens')
    await fetch(proxy.url + '/v1/models')
    assert.equal(fakes.chat!.requests.at(-1)!.path, '/v1/models')
    const health = (await (await fetch(proxy.url + '/healthz')).json()) as any
    assert.deepEqual(health.upstreams, [
      { route: '/messages', url: fakes.messages!.url },
      { route: '/responses', url: fakes.responses!.url },
      { route: '*', url: fakes.chat!.url },
    ])
  } finally {
    await stopCli(proxy)
    for (const fake of Object.values(fakes)) await fake.close()
  }
})
