/**
 * Every in-process cache has a budget, a flag, and its size in /metrics: sessions beyond the
 * budget push the least recently used out, and the caches never hold more than they may.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { startProxyCli, stopCli } from '../helpers/cli.js'
import { startFakeUpstream } from '../helpers/fake-upstream.js'
import { chatWithResults, postChat } from '../helpers/proxy.js'

test('--splice-cache-mb and --store-cache-mb bound the caches; /metrics shows their bytes', async () => {
  const upstream = await startFakeUpstream()
  const proxy = await startProxyCli(upstream.url, 'memory:', [
    '--splice-cache-mb',
    '0.01',
    '--store-cache-mb',
    '0.5',
  ])
  try {
    const sizes = async () => {
      const text = await (await fetch(proxy.url + '/metrics')).text()
      const of = (cache: string) =>
        Number(new RegExp(`^lembas_cache_bytes\\{cache="${cache}"\\} (\\S+)$`, 'm').exec(text)?.[1])
      return { splice: of('splice'), store: of('store') }
    }
    // Twenty sessions of ~100 KB each: about 2 MB of history and results, four times the store
    // cache's budget; what the fast path keeps of each is about 1 KB (spans of the client's
    // bytes, not a copy), twice its budget of 10 KB over the twenty.
    for (let s = 0; s < 20; s++) {
      const output = `session ${s}\n` + 'y'.repeat(99).concat('\n').repeat(1000)
      const reply = await postChat(proxy.url, chatWithResults([{ id: `c${s}`, output }]), {
        'x-session-id': `cache-${s}`,
      })
      assert.equal(reply.status, 200)
      const now = await sizes()
      assert.ok(now.splice <= 0.01 * 1024 * 1024, `splice ${now.splice}`)
      assert.ok(now.store <= 512 * 1024, `store ${now.store}`)
    }
    const end = await sizes()
    assert.ok(end.splice > 0.005 * 1024 * 1024, `the splice cache is used: ${end.splice}`)
    assert.ok(end.store > 0, `the store cache is used: ${end.store}`)
  } finally {
    await stopCli(proxy)
    await upstream.close()
  }
})

test('--memo-entries and --stats-sessions bound the small memos; /metrics shows every cache', async () => {
  const upstream = await startFakeUpstream()
  const proxy = await startProxyCli(upstream.url, 'memory:', [
    '--memo-entries',
    '3',
    '--stats-sessions',
    '4',
  ])
  const entries = async () => {
    const text = await (await fetch(proxy.url + '/metrics')).text()
    const of = (cache: string) =>
      Number(new RegExp(`^lembas_cache_entries\\{cache="${cache}"\\} (\\S+)$`, 'm').exec(text)?.[1])
    const caches = [
      'tenants',
      'listed_sessions',
      'session_heads',
      'warned_tools',
      'next_ids',
      'stats_sessions',
    ]
    return Object.fromEntries(
      [...caches, 'splice', 'store'].map((cache) => [cache, of(cache)] as const),
    )
  }
  // Ten clients, each with its own key and an implicit session (no session id): each makes a
  // tenant, a listed session, a head and a session in /stats.
  const client = (k: number, results: number) =>
    postChat(
      proxy.url,
      chatWithResults(
        Array.from({ length: results }, (_, r) => ({ id: `c${k}_${r}`, output: `key ${k} ${r}` })),
      ),
      { authorization: `Bearer key-${k}` },
    )
  try {
    for (let k = 0; k < 10; k++) assert.equal((await client(k, 1)).status, 200)
    const full = await entries()
    assert.equal(full.tenants, 3, 'tenants within --memo-entries')
    assert.equal(full.listed_sessions, 3, 'listed sessions within --memo-entries')
    assert.equal(full.session_heads, 3, 'heads within --memo-entries')
    assert.equal(full.warned_tools, 0, 'no drift warned')
    assert.equal(full.next_ids, 3, 'sessions next ids within --memo-entries')
    assert.equal(full.stats_sessions, 4, 'sessions in /stats within --stats-sessions')
    assert.ok(
      full.splice! > 0 && full.store! >= 0,
      `splice and store shown: ${JSON.stringify(full)}`,
    )
    const listed = (await (await fetch(proxy.url + '/stats')).json()) as { sessions: unknown[] }
    assert.equal(listed.sessions.length, 4)

    // The first client's session, its memos long evicted, goes on: the same session upstream
    // (its earlier result keeps its id), the memos refilled.
    const before = upstream.requests.length
    assert.equal((await client(0, 2)).status, 200)
    const sent = upstream.requests[before]!.json.messages as { role: string; content: string }[]
    const tools = sent.filter((m) => m.role === 'tool').map((m) => m.content)
    assert.deepEqual(
      tools.map((text) => /^\[#(\d+)\]/.exec(text)?.[1]),
      ['0001', '0002'],
      'the session went on with its ids',
    )
    assert.equal(tools[0], upstream.requests[0]!.json.messages.at(-1).content, 'byte-identical')
    assert.equal((await entries()).tenants, 3)
  } finally {
    await stopCli(proxy)
    await upstream.close()
  }
})
