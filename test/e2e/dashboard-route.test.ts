import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createStats } from '../../src/stats/index.js'
import { createStore } from '../../src/store/index.js'
import { startFakeUpstream } from '../helpers/fake-upstream.js'
import { startProxy } from '../helpers/proxy.js'

test('the proxy serves the dashboard at / (open with --auth: it holds no data) and keeps /stats behind the secret', async () => {
  const upstream = await startFakeUpstream()
  const proxy = await startProxy({
    upstreamUrl: upstream.url,
    store: await createStore('memory:', { idleTtlMs: 86_400_000 }),
    stats: createStats(),
    authSecret: 'dashboard-secret',
  })
  try {
    const page = await fetch(proxy.url + '/')
    assert.equal(page.status, 200)
    assert.match(page.headers.get('content-type') ?? '', /text\/html/)
    assert.match(await page.text(), /<html[\s\S]*stats/i)
    assert.equal((await fetch(proxy.url + '/stats')).status, 401)
    const stats = await fetch(proxy.url + '/stats', {
      headers: { 'x-lembas-auth': 'dashboard-secret' },
    })
    assert.equal(stats.status, 200)
  } finally {
    await proxy.close()
    await upstream.close()
  }
})
