/**
 * Cline 4's read_files of several files, through the proxy on a SQLite file shared by two
 * replicas: each file bracketed or stubbed inside its own string, the history the same bytes on
 * either replica, and the client's own rewrite of such a result ("outdated", as Cline 4 marks a
 * read a later one replaces) keeping its id while every stub that named it is sent in full.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import { createStore, type Store } from '../../src/store/index.js'
import { createWorkspace } from '../../src/workspace/index.js'
import { startFakeUpstream, type FakeUpstream } from '../helpers/fake-upstream.js'
import { chatRequests, prefixViolations, toolTexts } from '../helpers/model.js'
import { postChat, startProxy, type TestProxy } from '../helpers/proxy.js'
import { makeProject, sha8 } from '../helpers/workspace.js'

const DAY = 86_400_000
const OUTDATED = '[outdated - see the latest file content]'

/** A file's lines as Cline 4's read_files numbers them (right-aligned to the last number). */
function numbered(path: string): string {
  const lines = readFileSync(path, 'utf8').replace(/\n$/, '').split('\n')
  const width = String(lines.length).length
  return lines.map((line, i) => `${String(i + 1).padStart(width)} | ${line}`).join('\n')
}

type Entry = { query: string; result: string; success: boolean }

let upstream: FakeUpstream
let project: string
let dir: string
const stores: Store[] = []
const proxies: TestProxy[] = []
before(async () => {
  upstream = await startFakeUpstream()
  project = makeProject()
  dir = mkdtempSync(join(tmpdir(), 'lembas-read-files-'))
  for (let i = 0; i < 2; i++) {
    const store = await createStore('sqlite:' + join(dir, 'store.db'), { idleTtlMs: DAY })
    stores.push(store)
    proxies.push(
      await startProxy({
        upstreamUrl: upstream.url,
        store,
        workspace: await createWorkspace([project]),
      }),
    )
  }
})
after(async () => {
  for (const proxy of proxies) await proxy.close()
  await upstream.close()
  rmSync(project, { recursive: true, force: true })
  rmSync(dir, { recursive: true, force: true })
})

test('read_files of several files: a bracket or a stub in each string, on either replica', async () => {
  const app = join(project, 'app.ts')
  const util = join(project, 'util.ts')
  const messages: any[] = [
    { role: 'system', content: 'You are Cline.' },
    { role: 'user', content: 'Read app.ts and util.ts.' },
  ]
  const entry = (path: string): Entry => ({ query: path, result: numbered(path), success: true })
  let step = 0
  /** The model reads `paths` in one call; the client answers as Cline 4 does. */
  const readFiles = (paths: string[], answer = JSON.stringify(paths.map(entry))) => {
    const id = `call_${++step}`
    messages.push(
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id,
            type: 'function',
            function: {
              name: 'read_files',
              arguments: JSON.stringify({ files: paths.map((path) => ({ path })) }),
            },
          },
        ],
      },
      { role: 'tool', tool_call_id: id, content: answer },
    )
  }
  const send = async (replica: number) => {
    const body = {
      model: 'm',
      tools: [{ type: 'function', function: { name: 'read_files', parameters: {} } }],
      messages,
    }
    const reply = await postChat(proxies[replica]!.url, body, { 'x-session-id': 'cline-reads' })
    assert.equal(reply.status, 200, reply.text)
    return toolTexts(chatRequests(upstream.requests).at(-1))
  }
  const answerOf = (text: string, id: string): Entry[] => {
    assert.ok(text.startsWith(`[${id}]\n[`), text.slice(0, 120))
    return JSON.parse(text.slice(id.length + 3)) as Entry[]
  }
  const appBracket = (id: string) => `[${id} ${app} lines 1-340 of 340 sha ${sha8(app)}]`
  const utilBracket = (id: string) => `[${id} ${util} lines 1-3 of 3 sha ${sha8(util)}]`

  readFiles([app, util])
  const [first] = await send(0)
  assert.deepEqual(answerOf(first!, '#0001'), [
    { query: app, result: `${appBracket('#0001')}\n${numbered(app)}`, success: true },
    { query: util, result: `${utilBracket('#0001')}\n${numbered(util)}`, success: true },
  ])

  // util.ts alone, on the other replica (it parses the whole history): a stub of #0001.
  readFiles([util])
  const second = await send(1)
  assert.equal(second[0], first)
  assert.equal(
    second[1],
    `${utilBracket('#0002')} Unchanged since #0001, which already shows lines 1-3.`,
  )

  // Both again: both stubs, each in its string.
  readFiles([app, util])
  const third = await send(0)
  assert.deepEqual(third.slice(0, 2), second)
  assert.deepEqual(
    answerOf(third[2]!, '#0003').map((e) => e.result),
    [
      `${appBracket('#0003')} Unchanged since #0001, which already shows lines 1-340.`,
      `${utilBracket('#0003')} Unchanged since #0001, which already shows lines 1-3.`,
    ],
  )
  assert.deepEqual(prefixViolations(upstream.requests.slice(-3)), [])

  // Cline 4 marks the older read of app.ts outdated in its own history: #0001 keeps its id with
  // the client's text and is no stub target any more, so #0002 and #0003 go in full.
  const rewritten = [{ ...entry(app), result: OUTDATED }, entry(util)]
  messages[3].content = JSON.stringify(rewritten)
  messages.push({ role: 'user', content: 'Go on.' })
  const fourth = await send(1)
  assert.equal(fourth[0], `[#0001]\n${JSON.stringify(rewritten)}`)
  assert.equal(
    fourth[1],
    `${utilBracket('#0002')}\n[{"query":${JSON.stringify(util)},` +
      `"result":${JSON.stringify(numbered(util))},"success":true}]`,
  )
  assert.deepEqual(
    answerOf(fourth[2]!, '#0003').map((e) => e.result),
    [`${appBracket('#0003')}\n${numbered(app)}`, `${utilBracket('#0003')}\n${numbered(util)}`],
  )
  // And the next request, on the other replica, the same bytes.
  messages.push({ role: 'assistant', content: 'Read.' }, { role: 'user', content: 'Thanks.' })
  assert.deepEqual(await send(0), fourth)
})
