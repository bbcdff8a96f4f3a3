/**
 * The second round of hostile-user and flaky-network probes, one scenario per finding, each on
 * every door where the finding applies.
 */
import assert from 'node:assert/strict'
import { randomUUID } from 'node:crypto'
import { describe, test } from 'node:test'
import { createStore } from '../../src/store/index.js'
import { DOORS, type DoorSay } from '../helpers/doors.js'
import { startFakeUpstream, type RecordedRequest } from '../helpers/fake-upstream.js'
import { startProxy } from '../helpers/proxy.js'

const DAY = 86_400_000

describe('tenant-from-every-key: any difference in any credential header is another tenant', () => {
  for (const door of DOORS) {
    test(`${door.name}: a shared gateway token with another user's key, or one secret under another header, cannot recall`, async () => {
      // The model: a Bash call on the first turn of a session, recall #0001 on a "recall" turn.
      let n = 0
      const upstream = await startFakeUpstream((request: RecordedRequest) => {
        const all = JSON.stringify(request.json)
        const recalled = /No stored result|recall #0001/.test(all)
        let say: DoorSay
        if (recalled) say = { text: 'answered' }
        else if (all.includes('recall please'))
          say = { calls: [{ id: `r${++n}`, name: 'recall', args: { id: '#0001' } }] }
        else if (all.includes('A private')) say = { text: 'ran' }
        else say = { calls: [{ id: `c${++n}`, name: 'Bash', args: { command: 'cat secret' } }] }
        return door.respond(request, say, ++n)
      })
      const proxy = await startProxy({
        upstreamUrl: upstream.url,
        store: await createStore('memory:', { idleTtlMs: DAY }),
      })
      try {
        const pairs: [Record<string, string>, Record<string, string>][] = [
          [
            { authorization: 'Bearer gateway', 'x-api-key': 'user-A' },
            { authorization: 'Bearer gateway', 'x-api-key': 'user-B' },
          ],
          [{ 'x-api-key': 'one-secret' }, { authorization: 'one-secret' }],
        ]
        for (const [owner, other] of pairs) {
          // A uuid: Claude Code's form of a session id in metadata.user_id.
          const session = randomUUID()
          const a = door.client({ stream: false, session, credentials: owner })
          a.user('run it')
          const first = await a.send(proxy.url)
          assert.equal(first.status, 200, first.raw)
          a.results(first.calls, ['A private'])
          assert.equal((await a.send(proxy.url)).status, 200)
          // The other credentials, the same session name: recall #0001 finds nothing.
          const b = door.client({ stream: false, session, credentials: other })
          b.user('recall please')
          assert.equal((await b.send(proxy.url)).status, 200)
          const round = upstream.requests.at(-1)!
          const answer = door.results(round).at(-1)!
          assert.match(answer, /No stored result #0001 in this session\./)
          assert.doesNotMatch(JSON.stringify(round.json), /A private/)
          // The owner itself still can.
          a.user('recall please')
          assert.equal((await a.send(proxy.url)).status, 200)
          assert.match(door.results(upstream.requests.at(-1)!).at(-1)!, /recall #0001/)
        }
      } finally {
        await proxy.close()
        await upstream.close()
      }
    })
  }
})
