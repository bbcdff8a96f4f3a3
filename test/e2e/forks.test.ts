/**
 * A client that forks a conversation (Claude Code's `--fork-session`, opencode's `--fork`) sends
 * its whole history under a new session id. The session that owns that history goes on under
 * it: the fork's first request carries the recall exchange the client never saw and every
 * earlier result byte for byte as the original's last request did, its new results' ids go on
 * from the original's, and its later requests go on the fast path. On every door, on another
 * process than the one that served the original (one SQLite file).
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { createLogger } from '../../src/log.js'
import { createStore } from '../../src/store/index.js'
import type { Store } from '../../src/store/store.js'
import { DOORS, type Door } from '../helpers/doors.js'
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js'
import { requestLines, startProxy, type TestProxy } from '../helpers/proxy.js'

const FILE = Array.from({ length: 30 }, (_, i) => `line ${i + 1} of a.txt`).join('\n') + '\n'

let dir: string
before(() => {
  dir = mkdtempSync(join(tmpdir(), 'lembas-forks-'))
})
after(() => rmSync(dir, { recursive: true, force: true }))

/** Two proxies on one SQLite file: the original's process and the fork's. */
async function twoProcesses(upstream: FakeUpstream, name: string) {
  const stores: Store[] = []
  const lines: string[] = []
  const proxies: TestProxy[] = []
  for (const log of [undefined, createLogger('info', (line) => lines.push(line))]) {
    const store = await createStore(`sqlite:${join(dir, name + '.db')}`, { idleTtlMs: 86_400_000 })
    stores.push(store)
    proxies.push(await startProxy({ upstreamUrl: upstream.url, store, ...(log ? { log } : {}) }))
  }
  const close = async () => {
    for (const proxy of proxies) await proxy.close()
    for (const store of stores) await store.close()
  }
  return { original: proxies[0]!, fork: proxies[1]!, forkLines: lines, close }
}

/** The upstream history of a recorded request, each item as its bytes. */
function historyOf(door: Door, upstream: FakeUpstream, index: number): string[] {
  const request = upstream.requests[index]!
  return (request.json?.[door.historyField] as unknown[]).map((item) => JSON.stringify(item))
}

for (const door of DOORS)
  test(`${door.name}: a fork under a new session id goes on from the session it forked`, async () => {
    const upstream = await startFakeUpstream((request, index) => {
      const say = [
        { calls: [{ id: 'c1', name: 'Bash', args: { command: 'cat a.txt' } }] },
        { calls: [{ id: 'c2', name: 'Bash', args: { command: 'wc -l a.txt' } }] },
        { calls: [{ id: 'r1', name: 'recall', args: { id: '#0001' } }] },
        { text: 'Read it.' },
        { calls: [{ id: 'c3', name: 'Bash', args: { command: 'ls' } }] },
        { text: 'Listed.' },
        { text: 'Still here.' },
      ][index]
      return say
        ? door.respond(request, say, index)
        : { status: 500, body: '{"error":{"message":"the script ran out"}}' }
    })
    const { original, fork, forkLines, close } = await twoProcesses(upstream, door.name)
    try {
      const first = door.client({ stream: false, session: randomUUID() })
      first.user('read a.txt')
      first.results((await first.send(original.url)).calls, [FILE])
      first.results((await first.send(original.url)).calls, ['30 a.txt'])
      const read = await first.send(original.url)
      assert.equal(read.text, 'Read it.')
      assert.equal(upstream.requests.length, 4, 'the recall was answered and sent on')
      assert.match(door.results(upstream.requests[3]!).at(-1)!, /^\[#0003 recall #0001 /)
      const before = historyOf(door, upstream, 3)

      // The fork: the same history the client keeps, a session id of its own (Claude Code's a
      // uuid, as its own ids must be to be one), another process.
      const branch = door.client({ stream: false, session: randomUUID() })
      branch.history.splice(0, branch.history.length, ...structuredClone(first.history))
      branch.user('now list the files')
      const listed = await branch.send(fork.url)
      assert.deepEqual(
        listed.calls.map((call) => call.name),
        ['Bash'],
      )
      const forked = historyOf(door, upstream, 4)
      if (process.env.DBG)
        console.log(
          JSON.stringify(
            { before, forked, r: upstream.requests.map((r) => door.results(r)) },
            null,
            1,
          ),
        )
      assert.deepEqual(
        forked.slice(0, before.length),
        before,
        'every earlier item, the hidden recall exchange too, byte for byte',
      )
      branch.results(listed.calls, ['a.txt\nb.txt'])
      assert.equal((await branch.send(fork.url)).text, 'Listed.')
      assert.match(door.results(upstream.requests[5]!).at(-1)!, /^\[#0004\]\n/, 'ids go on')
      branch.user('anything else?')
      assert.equal((await branch.send(fork.url)).text, 'Still here.')
      const logged = requestLines(forkLines)
      assert.equal(logged.length, 3)
      assert.equal(logged.at(-1).spliced, 1, "the fork's later requests go on the fast path")
    } finally {
      await close()
      await upstream.close()
    }
  })
