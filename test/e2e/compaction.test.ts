import assert from 'node:assert/strict'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { after, before, describe, test } from 'node:test'
import { createStore } from '../../src/store/index.js'
import type { Store } from '../../src/store/store.js'
import { createWorkspace } from '../../src/workspace/index.js'
import { TestAgent } from '../helpers/agent.js'
import { anthropicMessage } from '../helpers/fake-anthropic.js'
import {
  chatCompletion,
  startFakeUpstream,
  type FakeUpstream,
  type RecordedRequest,
} from '../helpers/fake-upstream.js'
import {
  chatRequests,
  prefixViolations,
  scriptedModel,
  type Say,
  toolTexts,
} from '../helpers/model.js'
import { chatWithResults, postChat, postTo, startProxy, type TestProxy } from '../helpers/proxy.js'
import { makeProject, sha8 } from '../helpers/workspace.js'

const DAY = 86_400_000
const SUMMARY =
  'This session is being continued from a previous conversation that ran out of context. ' +
  'The summary below covers the earlier portion of the conversation.\n\nSummary:\n1. Primary Request and Intent: tidy app.ts'

function table(rows: string[]): string {
  return [
    '## Files read before this summary',
    '',
    'Read a file again for its content; recall shows a result by its id.',
    '',
    '| Path | Lines | sha | Result |',
    '|---|---|---|---|',
    ...rows,
    '',
  ].join('\n')
}

/** The agent compacts as Claude Code does: its history becomes the system prompt and a summary. */
function compact(agent: TestAgent): void {
  agent.messages.splice(1, agent.messages.length - 1, { role: 'user', content: SUMMARY })
}

describe('compaction', () => {
  let upstream: FakeUpstream
  let project: string
  let store: Store
  let proxy: TestProxy
  let app: string
  let util: string
  before(async () => {
    upstream = await startFakeUpstream()
    project = makeProject()
    app = join(project, 'app.ts')
    util = join(project, 'util.ts')
    store = await createStore('memory:', { idleTtlMs: DAY })
    proxy = await startProxy({
      upstreamUrl: upstream.url,
      store,
      workspace: await createWorkspace([project]),
    })
  })
  after(async () => {
    await proxy.close()
    await upstream.close()
    rmSync(project, { recursive: true, force: true })
  })

  const plan = (): Say[] => [
    { calls: [{ name: 'Read', args: { file_path: app } }] },
    { calls: [{ name: 'Read', args: { file_path: util } }] },
    { calls: [{ name: 'Read', args: { file_path: app, offset: 3, limit: 4 } }] },
    { calls: [{ name: 'Bash', args: { command: 'seq 1 600' } }] },
    { content: 'Read both.' },
  ]

  for (const explicit of [true, false]) {
    test(`the table follows the summary, ids go on, and a re-read is in full (${explicit ? 'session header' : 'no session header'})`, async () => {
      upstream.requests.length = 0
      let recalled = ''
      upstream.setScript(
        scriptedModel([
          ...plan(),
          { calls: [{ name: 'Read', args: { file_path: app, offset: 3, limit: 4 } }] },
          { calls: [{ name: 'recall', args: { id: '#0004', offset: 300, limit: 1 } }] },
          (request: RecordedRequest) => {
            recalled = request.json.messages.at(-1).content
            return { content: 'Continued.' }
          },
        ]),
      )
      const headers: Record<string, string> = explicit
        ? { 'x-session-id': 'compacting-' + Date.now() }
        : {}
      const agent = new TestAgent({
        proxyUrl: proxy.url,
        workspace: project,
        headers: { ...headers, authorization: `Bearer key-${explicit}` },
        system: `You are agent ${explicit ? 'A' : 'B'}.`,
      })
      await agent.ask('read app.ts and util.ts')
      compact(agent)
      assert.equal(await agent.ask('go on'), 'Continued.')

      const requests = chatRequests(upstream.requests)
      const afterCompaction = requests.slice(5)
      assert.deepEqual(
        prefixViolations(upstream.requests.filter((r) => afterCompaction.includes(r.json))),
        [],
      )
      const summary = afterCompaction[0].messages[1]
      assert.equal(
        summary.content,
        SUMMARY +
          '\n\n' +
          table([
            `| ${app} | 1-340 of 340 | ${sha8(app)} | #0001 |`,
            `| ${util} | 1-3 of 3 | ${sha8(util)} | #0002 |`,
          ]),
      )
      const [reread] = toolTexts(afterCompaction[1])
      assert.match(
        reread!,
        new RegExp(
          `^\\[#0005 ${app.replace(/[/.]/g, '\\$&')} lines 3-6 of 340 sha ${sha8(app)}\\]\\n`,
        ),
        'in full: nothing to stub against',
      )
      assert.equal(recalled, '[#0006 recall #0004 lines 300-300 of 600]\n300')
    })
  }

  test('a turn taken back before the compaction takes its reads with it', async () => {
    upstream.requests.length = 0
    upstream.setScript(
      scriptedModel([
        { calls: [{ name: 'Read', args: { file_path: app, offset: 1, limit: 5 } }] },
        { calls: [{ name: 'Read', args: { file_path: util } }] },
        { content: 'first try' },
        { calls: [{ name: 'Bash', args: { command: 'echo again' } }] },
        { content: 'second try' },
        { content: 'after the summary' },
      ]),
    )
    const agent = new TestAgent({
      proxyUrl: proxy.url,
      workspace: project,
      headers: { 'x-session-id': 'rewinding' },
    })
    await agent.ask('look')
    // Rewind to just after the first read: the util.ts read and the answer are taken back.
    const firstRead = agent.messages.findIndex((m) => m.role === 'tool')
    agent.messages.splice(firstRead + 1)
    const assistant = await agent.complete()
    assert.equal(assistant.content, null)
    agent.messages.push(assistant)
    agent.messages.push({
      role: 'tool',
      tool_call_id: assistant.tool_calls[0].id,
      content: agent.runTool('Bash', { command: 'echo again' }),
    })
    agent.messages.push(await agent.complete())
    compact(agent)
    await agent.ask('go on')
    const summary = chatRequests(upstream.requests).at(-1).messages[1].content
    assert.equal(
      summary,
      SUMMARY + '\n\n' + table([`| ${app} | 1-5 of 340 | ${sha8(app)} | #0001 |`]),
    )
    // The new result after the rewind got a fresh id, never util.ts's #0002.
    assert.match(toolTexts(chatRequests(upstream.requests)[4])[1]!, /^\[#0003\]\nagain/)
  })

  test('a summary with no reads before it gets no table', async () => {
    upstream.requests.length = 0
    upstream.setScript(
      scriptedModel([
        { calls: [{ name: 'Bash', args: { command: 'echo hi' } }] },
        { content: 'ok' },
        { content: 'ok again' },
      ]),
    )
    const agent = new TestAgent({
      proxyUrl: proxy.url,
      workspace: project,
      headers: { 'x-session-id': 'no-reads' },
    })
    await agent.ask('say hi')
    compact(agent)
    await agent.ask('go on')
    assert.equal(chatRequests(upstream.requests).at(-1).messages[1].content, SUMMARY)
  })

  test("Cline's summary arrives as a tool result: it gets its id, then the table", async () => {
    upstream.requests.length = 0
    upstream.setScript(
      scriptedModel([
        { calls: [{ name: 'Read', args: { file_path: util } }] },
        { content: 'ok' },
        { content: 'continuing' },
      ]),
    )
    const agent = new TestAgent({
      proxyUrl: proxy.url,
      workspace: project,
      headers: { 'x-session-id': 'cline-like' },
    })
    await agent.ask('read util')
    const summaryText =
      '[summarize_task] Result:\n\nThis session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\nWe read util.ts.'
    agent.messages.splice(
      1,
      agent.messages.length - 1,
      { role: 'user', content: 'task' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_sum',
            type: 'function',
            function: { name: 'summarize_task', arguments: '{}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_sum', content: summaryText },
    )
    agent.messages.push(await agent.complete())
    const tool = chatRequests(upstream.requests).at(-1).messages.at(-1)
    assert.equal(
      tool.content,
      `[#0002]\n${summaryText}\n\n` + table([`| ${util} | 1-3 of 3 | ${sha8(util)} | #0001 |`]),
    )
  })

  test('any client can signal a compaction with the header', async () => {
    upstream.requests.length = 0
    upstream.setScript(
      scriptedModel([
        { calls: [{ name: 'Read', args: { file_path: util } }] },
        { content: 'ok' },
        { content: 'ok' },
      ]),
    )
    const agent = new TestAgent({
      proxyUrl: proxy.url,
      workspace: project,
      headers: { 'x-session-id': 'signalled' },
    })
    await agent.ask('read util')
    agent.messages.splice(1, agent.messages.length - 1, {
      role: 'user',
      content: 'Our own summary: util.ts was read.',
    })
    ;(agent.options.headers as Record<string, string>)['x-lembas-compaction'] = 'true'
    await agent.ask('go on')
    assert.equal(
      chatRequests(upstream.requests).at(-1).messages[1].content,
      'Our own summary: util.ts was read.\n\n' +
        table([`| ${util} | 1-3 of 3 | ${sha8(util)} | #0001 |`]),
    )
  })

  test('two sessions alike in system prompt: a compaction without a session id starts a new session', async () => {
    upstream.requests.length = 0
    upstream.setScript(
      scriptedModel([
        { calls: [{ name: 'Read', args: { file_path: util } }] },
        { content: 'one' },
        { calls: [{ name: 'Read', args: { file_path: util } }] },
        { content: 'two' },
        { calls: [{ name: 'Read', args: { file_path: util } }] },
        { content: 'three' },
      ]),
    )
    const options = {
      proxyUrl: proxy.url,
      workspace: project,
      system: 'Twin system prompt.',
      headers: { authorization: 'Bearer twins' },
    }
    const first = new TestAgent(options)
    const second = new TestAgent(options)
    await first.ask('a')
    await second.ask('b')
    compact(first)
    await first.ask('c')
    const last = chatRequests(upstream.requests).at(-1)
    assert.equal(last.messages[1].content, SUMMARY, 'ambiguous: no table from either session')
    assert.match(toolTexts(last)[0]!, /^\[#0001 /, 'a new session counts from #0001')
  })
})

test('a summarisation request that offers no tools: its history as the requests before it had it, no tool added', async (t) => {
  const upstream = await startFakeUpstream()
  const store = await createStore('memory:', { idleTtlMs: DAY })
  const proxy = await startProxy({ upstreamUrl: upstream.url, store })
  t.after(async () => {
    await proxy.close()
    await upstream.close()
  })
  const long = Array.from({ length: 600 }, (_, i) => `line ${i + 1}`).join('\n')
  const turn = chatWithResults([{ id: 'call_seq', output: long }])
  assert.equal((await postChat(proxy.url, turn, { 'x-session-id': 's' })).status, 200)
  const shown = upstream.requests[0]!.json.messages[3].content
  assert.match(shown, /^\[#0001\]\n/)
  // The agent asks for a summary of the same history, with no tools; one result new there.
  const { tools: _, ...fields } = turn
  const summarise = {
    ...fields,
    messages: [
      ...turn.messages,
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'call_ls', type: 'function', function: { name: 'Bash', arguments: '{}' } },
        ],
      },
      { role: 'tool', tool_call_id: 'call_ls', content: 'a.ts\nb.ts' },
      { role: 'user', content: 'Summarise the conversation so far.' },
    ],
  }
  assert.equal((await postChat(proxy.url, summarise, { 'x-session-id': 's' })).status, 200)
  const sent = upstream.requests[1]!.json
  assert.equal(sent.tools, undefined, 'no tool added to a request that offers none')
  assert.equal(sent.messages[3].content, shown, 'the capped result as it was sent before')
  assert.equal(sent.messages[5].content, '[#0002]\na.ts\nb.ts')
  // The prompt block explains the ids it shows.
  assert.match(sent.messages[0].content, /Tool results start \[#id\]/)
})

describe('rewinds, forks and pruned results', () => {
  let upstream: FakeUpstream
  let project: string
  let proxy: TestProxy
  before(async () => {
    upstream = await startFakeUpstream()
    project = makeProject()
    proxy = await startProxy({
      upstreamUrl: upstream.url,
      store: await createStore('memory:', { idleTtlMs: DAY }),
      workspace: await createWorkspace([project]),
    })
  })
  after(async () => {
    await proxy.close()
    await upstream.close()
    rmSync(project, { recursive: true, force: true })
  })

  test('a fork keeps the renderings of the kept messages; new results get fresh ids; stubs only in the request', async () => {
    const app = join(project, 'app.ts')
    upstream.requests.length = 0
    upstream.setScript(
      scriptedModel([
        { calls: [{ name: 'Read', args: { file_path: app } }] },
        { calls: [{ name: 'Bash', args: { command: 'echo one' } }] },
        { content: 'branch one' },
        { calls: [{ name: 'Read', args: { file_path: app, offset: 2, limit: 2 } }] },
        { content: 'branch two' },
      ]),
    )
    const agent = new TestAgent({
      proxyUrl: proxy.url,
      workspace: project,
      headers: { 'x-session-id': 'forking' },
    })
    await agent.ask('go')
    const kept = agent.messages.findIndex((m) => m.role === 'tool')
    const branchOne = chatRequests(upstream.requests).at(-1)
    agent.messages.splice(kept + 1)
    agent.messages.push({ role: 'user', content: 'try another way' })
    await agent.ask('and read lines 2-3')
    const branchTwo = chatRequests(upstream.requests).at(-1)
    const one = toolTexts(branchOne)
    const two = toolTexts(branchTwo)
    assert.equal(two[0], one[0], 'the kept read renders identically')
    assert.match(
      two[1]!,
      /^\[#0003 .* lines 2-3 of 340 sha \w+\] Unchanged since #0001, which already shows lines 1-340\.$/,
    )
  })

  test('a result the client pruned keeps its id, leaves the table, and a stub naming it is sent in full', async () => {
    const util = join(project, 'util.ts')
    upstream.requests.length = 0
    upstream.setScript(
      scriptedModel([
        { calls: [{ name: 'Read', args: { file_path: util } }] },
        { calls: [{ name: 'Read', args: { file_path: util } }] },
        { content: 'read twice' },
        { calls: [{ name: 'Read', args: { file_path: util } }] },
        { content: 'after pruning' },
      ]),
    )
    const agent = new TestAgent({
      proxyUrl: proxy.url,
      workspace: project,
      headers: { 'x-session-id': 'pruning' },
    })
    await agent.ask('read util twice')
    const before = toolTexts(chatRequests(upstream.requests).at(-1))
    assert.match(before[1]!, /Unchanged since #0001/)
    // The agent prunes the first result, as opencode and Claude Code do.
    const first = agent.messages.find((m) => m.role === 'tool')!
    first.content = '[Old tool result content cleared]'
    await agent.ask('again')
    const texts = toolTexts(chatRequests(upstream.requests).at(-1))
    assert.equal(texts[0], '[#0001]\n[Old tool result content cleared]')
    assert.match(
      texts[1]!,
      /^\[#0002 \S+ lines 1-3 of 3 sha \w+\]\n +1→export function util/,
      'the stub of #0001 is sent in full',
    )
    assert.match(
      texts[2]!,
      /^\[#0003 \S+ lines 1-3 of 3 sha \w+\] Unchanged since #0002, which already shows lines 1-3\.$/,
    )
  })
})

test("an agent's own summary message (opencode's answer to its question) gets the table on the Messages door as on the chat door", async () => {
  const upstream = await startFakeUpstream((request) =>
    request.pathname.endsWith('/messages')
      ? { json: anthropicMessage([{ type: 'text', text: 'ok' }]) }
      : { json: chatCompletion({ content: 'ok' }) },
  )
  const proxy = await startProxy({
    upstreamUrl: upstream.url,
    store: await createStore('memory:', { idleTtlMs: DAY }),
  })
  // opencode's read tool and its answer (blind: the path as given, no sha).
  const names = ['read', 'bash', 'edit', 'write', 'glob', 'grep']
  const file =
    '<file>\n00001| const a = 1\n00002| const b = 2\n\n(End of file - total 2 lines)\n</file>'
  const question = 'What did we do so far?'
  const summary = 'We read a.ts.'
  try {
    // The Messages door: the summary as a text block, and as a string.
    const messagesBody = (messages: unknown[]) => ({
      model: 'm',
      max_tokens: 10,
      system: 'You are opencode.',
      tools: names.map((name) => ({ name, input_schema: { type: 'object' } })),
      messages,
    })
    for (const [session, said] of [
      ['blocks', [{ type: 'text', text: summary }]],
      ['string', summary],
    ] as const) {
      const headers = { 'x-session-id': `opencode-${session}`, 'anthropic-version': '2023-06-01' }
      await postTo(
        proxy.url + '/v1/messages',
        messagesBody([
          { role: 'user', content: 'read a.ts' },
          {
            role: 'assistant',
            content: [{ type: 'tool_use', id: 't1', name: 'read', input: { filePath: '/p/a.ts' } }],
          },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: file }] },
        ]),
        headers,
      )
      const after = [
        { role: 'user', content: question },
        { role: 'assistant', content: said },
        { role: 'user', content: 'go on' },
      ]
      await postTo(proxy.url + '/v1/messages', messagesBody(after), headers)
      // The next request goes on from it (the door held its last two messages back, the
      // summary among them): the summary keeps its table, byte for byte.
      await postTo(
        proxy.url + '/v1/messages',
        messagesBody([
          ...after,
          {
            role: 'assistant',
            content: [{ type: 'tool_use', id: 't2', name: 'bash', input: { command: 'ls' } }],
          },
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: 't2', content: 'a.ts\n' }],
          },
        ]),
        headers,
      )
    }
    // The chat door, the same session.
    const chatTools = names.map((name) => ({
      type: 'function',
      function: { name, parameters: { type: 'object' } },
    }))
    const chat = (messages: unknown[]) =>
      postChat(
        proxy.url,
        { model: 'm', tools: chatTools, messages },
        { 'x-session-id': 'opencode-chat' },
      )
    await chat([
      { role: 'system', content: 'You are opencode.' },
      { role: 'user', content: 'read a.ts' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 't1',
            type: 'function',
            function: { name: 'read', arguments: '{"filePath":"/p/a.ts"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 't1', content: file },
    ])
    // opencode with an Anthropic model through an OpenAI-compatible API marks its last two
    // messages (the door then holds them back): the summary among them keeps its table after.
    const marker = { cache_control: { type: 'ephemeral' } }
    const marked = (text: string) => [{ type: 'text', text, ...marker }]
    const opening = [
      { role: 'system', content: 'You are opencode.' },
      { role: 'user', content: question },
    ]
    await chat([
      ...opening,
      { role: 'assistant', content: summary },
      { role: 'user', content: 'go on' },
    ])
    await chat([
      ...opening,
      { role: 'assistant', content: marked(summary) },
      { role: 'user', content: marked('go on') },
    ])
    await chat([
      ...opening,
      { role: 'assistant', content: [{ type: 'text', text: summary }] },
      { role: 'user', content: [{ type: 'text', text: 'go on' }] },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 't2', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } },
        ],
      },
      { role: 'tool', tool_call_id: 't2', content: marked('a.ts\n') },
    ])
    const sent = upstream.requests.map((r) => r.json)
    const chatSummary: string = sent[7].messages[2].content
    assert.ok(
      chatSummary.startsWith(summary + '\n\n## Files read before this summary'),
      chatSummary,
    )
    const table = chatSummary.slice(summary.length + 2)
    assert.ok(table.includes('| /p/a.ts | 1-2 of 2 |'), table)
    assert.deepEqual(sent[1].messages[1].content, [
      { type: 'text', text: summary },
      { type: 'text', text: table },
    ])
    assert.deepEqual(sent[2].messages[1], sent[1].messages[1], 'the next request: the same')
    assert.equal(sent[4].messages[1].content, `${summary}\n\n${table}`)
    assert.deepEqual(sent[5].messages[1], sent[4].messages[1], 'the next request: the same')
    // Marked: the table after the summary's part, then the same with the marker gone.
    const [, , , , , , , , withMarkers, next] = sent
    assert.deepEqual(withMarkers.messages[2].content, [
      ...marked(summary),
      { type: 'text', text: table },
    ])
    assert.deepEqual(next.messages[2].content, [
      { type: 'text', text: summary },
      { type: 'text', text: table },
    ])
  } finally {
    await proxy.close()
    await upstream.close()
  }
})

test('a summary that shares its Messages item with a tool result: the result stays, the table follows the summary', async () => {
  const upstream = await startFakeUpstream(() => ({
    json: anthropicMessage([{ type: 'text', text: 'ok' }]),
  }))
  const proxy = await startProxy({
    upstreamUrl: upstream.url,
    store: await createStore('memory:', { idleTtlMs: DAY }),
  })
  const body = (messages: unknown[]) => ({
    model: 'm',
    max_tokens: 10,
    system: 'sys',
    tools: ['Read', 'Bash'].map((name) => ({ name, input_schema: { type: 'object' } })),
    messages,
  })
  const headers = { 'x-session-id': 'shared-item', 'anthropic-version': '2023-06-01' }
  const call = (id: string, name: string, input: object) => ({
    role: 'assistant',
    content: [{ type: 'tool_use', id, name, input }],
  })
  try {
    await postTo(
      proxy.url + '/v1/messages',
      body([
        { role: 'user', content: 'read' },
        call('t1', 'Read', { file_path: '/p/a.ts' }),
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 't1', content: '     1\tconst a = 1\n' }],
        },
      ]),
      headers,
    )
    // The client marks the text after the new result as its summary (message 3 of the view).
    const answer = await postTo(
      proxy.url + '/v1/messages',
      body([
        { role: 'user', content: 'read' },
        call('t2', 'Bash', { command: 'ls' }),
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 't2', content: 'a.ts' },
            { type: 'text', text: 'Summary: we read a.ts' },
          ],
        },
      ]),
      { ...headers, 'x-lembas-compaction': '3' },
    )
    assert.equal(answer.status, 200, answer.text)
    const [result, summary, table] = upstream.requests.at(-1)!.json.messages[2].content
    assert.equal(result.type, 'tool_result')
    assert.equal(result.tool_use_id, 't2')
    assert.match(result.content, /^\[#0002\]\na\.ts$/)
    assert.deepEqual(summary, { type: 'text', text: 'Summary: we read a.ts' })
    assert.match(
      table.text,
      /^## Files read before this summary\n[\s\S]*\| \/p\/a\.ts \| 1-1 \| +\| #0001 \|/,
    )
  } finally {
    await proxy.close()
    await upstream.close()
  }
})
