/** Cases a review found: each once gave the model different bytes, a wrong id or a broken stream. */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { assembleStream } from '../helpers/agent.js'
import { chatCompletion } from '../helpers/fake-upstream.js'
import { chatRequests, prefixViolations, scriptedModel, toolTexts } from '../helpers/model.js'
import { postChat, proxyOnFake } from '../helpers/proxy.js'

const TOOLS = [
  { type: 'function', function: { name: 'Bash', parameters: { type: 'object', properties: {} } } },
]
const call = (id: string) => ({
  role: 'assistant',
  content: null,
  tool_calls: [{ id, type: 'function', function: { name: 'Bash', arguments: '{}' } }],
})

describe('review regressions', () => {
  const fixture = proxyOnFake()

  test('a text reply after a recall is restored only in its place, not wherever the same text stands', async () => {
    fixture.upstream.requests.length = 0
    fixture.upstream.setScript(
      scriptedModel([
        { calls: [{ name: 'recall', args: { id: '#0001' } }] },
        { content: 'Done.' },
        { content: 'ok' },
      ]),
    )
    const headers = { 'x-session-id': 'done-twice' }
    const history = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'first' },
      { role: 'assistant', content: 'Done.' },
      { role: 'user', content: 'second' },
    ]
    await postChat(fixture.proxy.url, { model: 'm', tools: TOOLS, messages: history }, headers)
    await postChat(
      fixture.proxy.url,
      {
        model: 'm',
        tools: TOOLS,
        messages: [
          ...history,
          { role: 'assistant', content: 'Done.' },
          { role: 'user', content: 'third' },
        ],
      },
      headers,
    )
    const last = chatRequests(fixture.upstream.requests).at(-1)
    const roles = last.messages.map((m: any) => m.role + (m.tool_calls ? '+calls' : ''))
    assert.deepEqual(roles, [
      'system',
      'user',
      'assistant',
      'user',
      'assistant+calls',
      'tool',
      'assistant',
      'user',
    ])
    assert.deepEqual(prefixViolations(fixture.upstream.requests), [])
  })

  test('a later system message never moves the prompt block', async () => {
    fixture.upstream.requests.length = 0
    fixture.upstream.setScript(() => ({ json: chatCompletion({ content: 'ok' }) }))
    const headers = { 'x-session-id': 'late-system' }
    const messages: any[] = [
      { role: 'user', content: 'hi' },
      call('c1'),
      { role: 'tool', tool_call_id: 'c1', content: 'out' },
    ]
    await postChat(fixture.proxy.url, { model: 'm', tools: TOOLS, messages }, headers)
    messages.push(
      { role: 'assistant', content: 'ok' },
      { role: 'system', content: 'a reminder' },
      { role: 'user', content: 'go on' },
    )
    await postChat(fixture.proxy.url, { model: 'm', tools: TOOLS, messages }, headers)
    assert.deepEqual(prefixViolations(fixture.upstream.requests), [])
    assert.equal(
      chatRequests(fixture.upstream.requests).at(-1).messages.at(-2).content,
      'a reminder',
    )
  })

  test('a call id used again for a new result later gets a new id, not the old one', async () => {
    fixture.upstream.requests.length = 0
    fixture.upstream.setScript(() => ({ json: chatCompletion({ content: 'ok' }) }))
    const headers = { 'x-session-id': 'reused-ids' }
    const messages: any[] = [
      { role: 'user', content: 'hi' },
      call('call_0'),
      { role: 'tool', tool_call_id: 'call_0', content: 'first' },
    ]
    await postChat(fixture.proxy.url, { model: 'm', tools: TOOLS, messages }, headers)
    messages.push(call('call_0'), { role: 'tool', tool_call_id: 'call_0', content: 'second' })
    await postChat(fixture.proxy.url, { model: 'm', tools: TOOLS, messages }, headers)
    assert.deepEqual(toolTexts(chatRequests(fixture.upstream.requests).at(-1)), [
      '[#0001]\nfirst',
      '[#0002]\nsecond',
    ])
  })

  test('a last delta that comes with the finish reaches the client once; a call without index still arrives', async () => {
    fixture.upstream.setScript(() => ({
      sse: [
        {
          id: 'x',
          object: 'chat.completion.chunk',
          choices: [
            { index: 0, delta: { role: 'assistant', content: 'Hel' }, finish_reason: null },
          ],
        },
        {
          id: 'x',
          object: 'chat.completion.chunk',
          choices: [
            {
              index: 0,
              delta: {
                tool_calls: [
                  { id: 'k1', type: 'function', function: { name: 'Bash', arguments: '{}' } },
                ],
              },
              finish_reason: null,
            },
          ],
        },
        {
          id: 'x',
          object: 'chat.completion.chunk',
          choices: [{ index: 0, delta: { content: 'lo' }, finish_reason: 'tool_calls' }],
        },
      ],
    }))
    const reply = await postChat(fixture.proxy.url, {
      model: 'm',
      stream: true,
      tools: TOOLS,
      messages: [{ role: 'user', content: 'hi' }],
    })
    const message = assembleStream(reply.text)
    assert.equal(message.content, 'Hello')
    assert.equal(message.tool_calls?.[0]?.function.name, 'Bash')
  })
})
