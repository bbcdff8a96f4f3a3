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
