/**
 * What a session saved, as /stats counts it: every request's tool results as the client sent
 * them less as the upstream got them, less the prompt block and recall tool the proxy added
 * (`inputTokensSaved`), and that in dollars with `--price-per-mtok` (new results uncached, the
 * rest cached). Checked against the requests the upstream really received.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createLogger } from '../../src/log.js'
import { createStats } from '../../src/stats/index.js'
import { createStore } from '../../src/store/index.js'
import { DOORS, type DoorCall } from '../helpers/doors.js'
import { startFakeUpstream, type RecordedRequest } from '../helpers/fake-upstream.js'
import { loop, promptBlock, requestLines, startProxy } from '../helpers/proxy.js'
import { recallSetup } from '../../src/pipeline/recall.js'

const FILE = Array.from({ length: 300 }, (_, i) => `line ${i + 1} of the file`).join('\n') + '\n'
const COMMANDS = ['cat a.txt', 'ls', 'cat a.txt', 'ls', 'seq 1 3000', 'cat a.txt']
const OUTPUTS: Record<string, string> = {
  'cat a.txt': FILE,
  ls: 'a.txt\nb.txt\n',
  'seq 1 3000': Array.from({ length: 3000 }, (_, i) => String(i + 1)).join('\n'),
}
const PRICES = { perMTok: 3, cachedDiscount: 0.9, writePremium: 0.25 }

test('/stats counts the input each request did not carry, and its price', async () => {
  const door = DOORS[0]!
  let n = 0
  const upstream = await startFakeUpstream((request: RecordedRequest) => {
    const step = n++
    const command = COMMANDS[step]
    if (command === undefined) return door.respond(request, { text: 'Done.' }, step)
    const call: DoorCall = { id: `call_${step}`, name: 'Bash', args: { command } }
    return door.respond(request, { calls: [call] }, step)
  })
  const stats = createStats({ prices: PRICES })
  const lines: string[] = []
  const proxy = await startProxy({
    upstreamUrl: upstream.url,
    store: await createStore('memory:', { idleTtlMs: 86_400_000 }),
    stats,
    log: createLogger('info', (line) => void lines.push(line)),
  })
  const sent: any[][] = []
  try {
    const client = door.client({ stream: false })
    client.user('read a.txt')
    for (;;) {
      sent.push(structuredClone(client.history))
      const answer = await client.send(proxy.url)
      assert.equal(answer.status, 200, answer.raw.slice(0, 200))
      if (answer.calls.length === 0) break
      client.results(answer.calls, [OUTPUTS[String(answer.calls[0]!.args.command)]!])
    }
  } finally {
    await proxy.close()
    await upstream.close()
  }

  // Independently: per request, the client's tool texts less the upstream's, less the overhead.
  const overhead = promptBlock.length + JSON.stringify(recallSetup(loop.proxy.recall).tool).length
  const logged = requestLines(lines)
  let tokens = 0
  let money = 0
  upstream.requests.forEach((request, k) => {
    const clientChars = sent[k]!.filter((m) => m.role === 'tool').map((m) => m.content.length)
    const upstreamChars = door.results(request).map((text) => text.length)
    assert.equal(upstreamChars.length, clientChars.length, `request ${k}: one result for one`)
    const carried = clientChars.reduce((sum, c, i) => sum + c - upstreamChars[i]!, 0)
    const saved = Math.round((carried - overhead) / 4)
    const fresh = logged[k].charsSaved / 4
    tokens += saved
    money += (fresh * 3 * 1.25 + (saved - fresh) * 3 * 0.1) / 1e6
  })
  const { totals, sessions, prices } = stats.snapshot()
  assert.deepEqual(prices, PRICES)
  assert.equal(totals.inputTokensSaved, tokens, 'every request, every result it carries')
  assert.equal(sessions[0]!.inputTokensSaved, tokens)
  assert.ok(tokens > (3 * FILE.length) / 4, `more than the re-reads once: ${tokens}`)
  assert.ok(Math.abs(totals.moneySaved! - money) < 1e-5, `${totals.moneySaved} vs ${money}`)

  // Without prices: tokens, no money.
  const plain = createStats()
  plain.recordRequest({
    door: 'chat',
    session: 's',
    status: 200,
    ms: 1,
    stream: false,
    recalls: 0,
    upstreamError: false,
    rebuild: {
      newResults: 1,
      stubs: 0,
      dedupes: 0,
      caps: 0,
      charsSaved: 400,
      carriedChars: 1000,
      overheadChars: 200,
    },
  })
  assert.equal(plain.snapshot().totals.inputTokensSaved, 200)
  assert.equal(plain.snapshot().totals.moneySaved, null)
  assert.equal(plain.snapshot().prices, null)
})
