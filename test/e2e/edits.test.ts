import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { createLogger } from '../../src/log.js'
import { createStore, type Store } from '../../src/store/index.js'
import { createWorkspace } from '../../src/workspace/index.js'
import { TestAgent } from '../helpers/agent.js'
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js'
import { chatRequests, prefixViolations, scriptedModel, toolTexts } from '../helpers/model.js'
import { requestLines, startProxy } from '../helpers/proxy.js'
import { makeProject, sha8 } from '../helpers/workspace.js'

const DAY = 86_400_000

for (const mode of ['workspace', 'blind'] as const) {
  describe(`edits are answered with their diff (${mode} mode)`, () => {
    let upstream: FakeUpstream
    let project: string
    before(async () => {
      upstream = await startFakeUpstream()
      project = makeProject()
    })
    after(async () => {
      await upstream.close()
      rmSync(project, { recursive: true, force: true })
    })

    test('edit, re-read, write new, write over, failed edit', async () => {
      const app = join(project, 'app.ts')
      const util = join(project, 'util.ts')
      const fresh = join(project, 'new.md')
      upstream.setScript(
        scriptedModel([
          { calls: [{ name: 'Read', args: { file_path: app } }] },
          {
            calls: [
              {
                name: 'Edit',
                args: { file_path: app, old_string: 'line20 = 20', new_string: 'line20 = 2000' },
              },
            ],
          },
          { calls: [{ name: 'Read', args: { file_path: app, offset: 15, limit: 10 } }] },
          { calls: [{ name: 'Write', args: { file_path: fresh, content: '# New\n\nhello\n' } }] },
          { calls: [{ name: 'Read', args: { file_path: util } }] },
          {
            calls: [
              {
                name: 'Write',
                args: { file_path: util, content: 'export function util() {\n  return 2\n}\n' },
              },
            ],
          },
          {
            calls: [
              { name: 'Edit', args: { file_path: util, old_string: 'not there', new_string: 'x' } },
            ],
          },
          { content: 'done' },
        ]),
      )
      const store = await createStore('memory:', { idleTtlMs: DAY })
      const workspace = mode === 'workspace' ? await createWorkspace([project]) : undefined
      const proxy = await startProxy({
        upstreamUrl: upstream.url,
        store,
        ...(workspace ? { workspace } : {}),
      })
      try {
        const agent = new TestAgent({ proxyUrl: proxy.url, workspace: project })
        assert.equal(await agent.ask('edit things'), 'done')
        assert.deepEqual(prefixViolations(upstream.requests), [])
        const texts = toolTexts(chatRequests(upstream.requests).at(-1))
        const shaApp =
          mode === 'workspace'
            ? sha8(app)
            : createHash('sha256').update(readFileSync(app)).digest('hex').slice(0, 8)
        assert.equal(
          texts[1],
          [
            `[#0002 ${app} sha ${shaApp}]`,
            '@@ -17,7 +17,7 @@',
            ' export const line17 = 17 // app',
            ' export const line18 = 18 // app',
            ' export const line19 = 19 // app',
            '-export const line20 = 20 // app',
            '+export const line20 = 2000 // app',
            ' export const line21 = 21 // app',
            ' export const line22 = 22 // app',
            ' export const line23 = 23 // app',
          ].join('\n'),
        )
        // The file changed since #0001: the ranged re-read is in full, not a stub.
        assert.match(
          texts[2]!,
          mode === 'workspace'
            ? /^\[#0003 \S+ lines 15-24 of 340 sha [0-9a-f]{8}\]\n/
            : /^\[#0003 \S+ lines 15-24\]\n/,
        )
        assert.equal(texts[3], `[#0004 ${fresh} sha ${sha8(fresh)}] Created, 3 lines.`)
        assert.equal(
          texts[5],
          [
            `[#0006 ${util} sha ${sha8(util)}]`,
            '@@ -1,3 +1,3 @@',
            ' export function util() {',
            '-  return 1',
            '+  return 2',
            ' }',
          ].join('\n'),
        )
        assert.match(texts[6]!, /^\[#0007\]\n<tool_use_error>String to replace not found/)
        // recall of the edit shows its whole diff.
      } finally {
        await proxy.close()
        await store.close()
      }
    })
  })
}

/** The store, noting for each read how many upstream requests had been made before it. */
function watched(store: Store, upstream: FakeUpstream): { store: Store; readsAt: number[] } {
  const readsAt: number[] = []
  const wrapped: Store = Object.create(store) as Store
  wrapped.get = (scope, keys) => {
    if (keys.length > 0) readsAt.push(upstream.requests.length)
    return store.get(scope, keys)
  }
  return { store: wrapped, readsAt }
}

test('an edit on the fast path diffs against a file shown before it with one store read', async () => {
  const project = makeProject()
  const app = join(project, 'app.ts')
  const upstream = await startFakeUpstream(
    scriptedModel([
      { calls: [{ name: 'Read', args: { file_path: app } }] },
      {
        calls: [
          {
            name: 'Edit',
            args: { file_path: app, old_string: 'line20 = 20', new_string: 'line20 = 2000' },
          },
        ],
      },
      { content: 'done' },
    ]),
  )
  // No cache: every read reaches the backend, as on a process whose cache has moved on.
  const { store, readsAt } = watched(
    await createStore('memory:', { idleTtlMs: DAY, cacheBytes: 0 }),
    upstream,
  )
  const lines: string[] = []
  const proxy = await startProxy({
    upstreamUrl: upstream.url,
    store,
    log: createLogger('info', (line) => lines.push(line)),
  })
  try {
    const agent = new TestAgent({ proxyUrl: proxy.url, workspace: project })
    assert.equal(await agent.ask('edit'), 'done')
    const texts = toolTexts(chatRequests(upstream.requests).at(-1))
    assert.match(
      texts[1]!,
      /^\[#0002 \S+app\.ts sha [0-9a-f]{8}\]\n@@ -17,7 \+17,7 @@\n/,
      'the edit is a diff',
    )
    assert.equal(requestLines(lines)[2]?.spliced, 1, 'the edit went on from the read')
    // The third request (after two upstream requests) carries the edit's result.
    assert.equal(readsAt.filter((made) => made === 2).length, 1, `reads: ${readsAt}`)
  } finally {
    await proxy.close()
    await upstream.close()
    await store.close()
    rmSync(project, { recursive: true, force: true })
  }
})
