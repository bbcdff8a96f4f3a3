/**
 * `--observe`: a first day without risk. Every request of every door goes upstream exactly as
 * the agent sent it (no prompt block, no recall tool, no brackets), while the proxy shapes it in
 * shadow and `/stats` says what it would have saved. Shadow sessions stay apart from real ones.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { DOORS, type Door, type DoorCall } from '../helpers/doors.js'
import { startFakeUpstream, type RecordedRequest } from '../helpers/fake-upstream.js'
import { startProxyCli, stopCli } from '../helpers/cli.js'
import { promptBlock, startProxy } from '../helpers/proxy.js'
import { createStore } from '../../src/store/index.js'
import { createLogger } from '../../src/log.js'

const FILE = Array.from({ length: 400 }, (_, i) => `line ${i + 1} of a.txt`).join('\n') + '\n'
const COMMANDS = ['cat a.txt', 'ls', 'cat a.txt', 'ls']
const OUTPUTS: Record<string, string> = { 'cat a.txt': FILE, ls: 'a.txt\nb.txt\nc.txt\n' }

/** The model: the commands one by one, then a reply; a chat answer says its usage too. */
function script(door: Door) {
  let n = 0
  return (request: RecordedRequest) => {
    const step = n++
    const command = COMMANDS[step]
    const call: DoorCall = { id: `call_${step}`, name: 'Bash', args: { command } }
    const say = command === undefined ? { text: 'Done.' } : { calls: [call] }
    const response = door.respond(request, say, step)
    if ('json' in response && door.name === 'chat')
      (response.json as Record<string, unknown>).usage = {
        prompt_tokens: 50,
        completion_tokens: 5,
        total_tokens: 55,
      }
    return response
  }
}

/** A session through the proxy; what the client sent each time, and what the upstream got. */
async function session(door: Door, proxyUrl: string, upstream: { requests: RecordedRequest[] }) {
  const client = door.client({ stream: door.name !== 'chat' })
  client.user('look at a.txt')
  const sent: string[] = []
  for (let i = 0; i <= COMMANDS.length; i++) {
    sent.push(JSON.stringify(client.history))
    const answer = await client.send(proxyUrl)
    assert.equal(answer.status, 200, answer.raw.slice(0, 300))
    if (answer.calls.length === 0) break
    client.results(answer.calls, [OUTPUTS[String(answer.calls[0]!.args.command)]!])
  }
  const got = upstream.requests.filter((r) => r.pathname.endsWith(door.upstreamPath))
  return { sent, got: got.slice(-sent.length) }
}

test('--observe: every door forwards the agent bytes, shapes in shadow, and /stats says what it would save', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'lembas-observe-'))
  const store = 'sqlite:' + join(dir, 'lembas.db')
  const upstream = await startFakeUpstream()
  // Closed whatever fails: a fake left open keeps the test file from ending.
  t.after(async () => {
    await upstream.close()
    rmSync(dir, { recursive: true, force: true })
  })
  let proxy = await startProxyCli(upstream.url, store, ['--observe'])
  try {
    assert.match(proxy.stdout, /observing: requests go upstream as sent/)
    for (const door of DOORS) {
      upstream.setScript(script(door))
      const { sent, got } = await session(door, proxy.url, upstream)
      assert.equal(got.length, sent.length, `${door.name}: one upstream request per request`)
      got.forEach((request, i) => {
        assert.equal(
          JSON.stringify(request.json[door.historyField]),
          sent[i],
          `${door.name} request ${i}: the history as the agent sent it`,
        )
        assert.doesNotMatch(request.body, /\[#000\d/, `${door.name}: no brackets upstream`)
        assert.ok(!request.body.includes('recall'), `${door.name}: no recall tool upstream`)
        assert.ok(
          !request.body.includes(promptBlock.slice(0, 60)),
          `${door.name}: no prompt block upstream`,
        )
      })
      // Byte for byte, whatever the spacing and order the client chose.
      const last = got.at(-1)!.json
      const odd = JSON.stringify({ ...last, zz: 1 }, null, 3)
      const before = upstream.requests.length
      const headers: Record<string, string> = { 'content-type': 'application/json' }
      if (door.name === 'messages') headers['x-api-key'] = 'k'
      await fetch(proxy.url + '/v1' + door.upstreamPath, { method: 'POST', headers, body: odd })
      assert.equal(upstream.requests[before]!.body, odd, `${door.name}: the bytes as sent`)
    }
    const stats = (await (await fetch(proxy.url + '/stats')).json()) as any
    assert.equal(stats.observe, true, '/stats says the figures are what would be saved')
    assert.ok(stats.totals.stubs >= DOORS.length, `a would-be stub per door: ${stats.totals.stubs}`)
    assert.ok(
      stats.totals.dedupes >= DOORS.length,
      `a would-be dedupe per door: ${stats.totals.dedupes}`,
    )
    assert.ok(stats.totals.charsSaved > FILE.length, `would save: ${stats.totals.charsSaved}`)
    // The answers passed as they came, and their usage was read on the way, on every door.
    for (const door of DOORS) {
      // The session of the agent's requests (the odd ones above are sessions of other tenants:
      // the anonymous one's without a key, where one door's goes on from another's with the
      // same results, and on the Messages door a key of its own).
      const session = stats.sessions.find(
        (s: any) => s.door === door.name && s.requests > 1 && !s.session.startsWith('o.anonymous/'),
      )
      assert.ok(session.promptTokens > 0, `${door.name}: usage read, ${session.promptTokens}`)
      assert.equal(session.requests, COMMANDS.length + 1)
    }
    assert.ok(
      stats.sessions.every((s: any) => s.session.startsWith('o.')),
      `shadow sessions apart: ${stats.sessions.map((s: any) => s.session)}`,
    )
    const page = await (await fetch(proxy.url + '/')).text()
    assert.match(page, /would save/i, 'the dashboard says "would save" in observe mode')
  } finally {
    await stopCli(proxy)
  }

  // Turned off on the same store: sessions start afresh, shaped for real.
  proxy = await startProxyCli(upstream.url, store, ['--stats', 'memory'])
  try {
    const door = DOORS[0]!
    upstream.setScript(script(door))
    const { got } = await session(door, proxy.url, upstream)
    assert.match(got.at(-1)!.body, /\[#0001 a\.txt lines 1-400\]/, 'shaped once observing is off')
    const stats = (await (await fetch(proxy.url + '/stats')).json()) as any
    assert.equal(stats.observe, false)
    assert.ok(!stats.sessions[0].session.startsWith('o.'), stats.sessions[0].session)
  } finally {
    await stopCli(proxy)
  }
})

test('--observe: a store that fails (down, locked) never reaches the agent: its bytes go upstream, the shadow failure is logged', async () => {
  for (const door of DOORS) {
    const upstream = await startFakeUpstream()
    upstream.setScript(script(door))
    const store = await createStore('memory:', { idleTtlMs: 86_400_000 })
    const lines: string[] = []
    const proxy = await startProxy({
      upstreamUrl: upstream.url,
      store,
      observe: true,
      log: createLogger('info', (line) => void lines.push(line)),
    })
    await store.close()
    try {
      const { sent, got } = await session(door, proxy.url, upstream)
      assert.equal(got.length, sent.length, `${door.name}: every request went upstream`)
      got.forEach((request, i) =>
        assert.equal(
          JSON.stringify(request.json[door.historyField]),
          sent[i],
          `${door.name}: request ${i} as the agent sent it`,
        ),
      )
      const failed = lines.map((line) => JSON.parse(line)).filter((l) => l.level !== 'info')
      assert.ok(failed.length > 0, 'the shadow failures are logged')
      assert.ok(
        failed.every((l) => l.event === 'observe-shadow-failed' && l.kind === 'store_unavailable'),
        JSON.stringify(failed),
      )
    } finally {
      await proxy.close()
      await upstream.close()
    }
  }
})
