import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { messagesDoor } from '../../src/doors/index.js'

const toView = (request: any) => messagesDoor.toView(request.messages)
const writeBack = (request: any, view: any, rebuilt: any) =>
  messagesDoor.writeBack(request.messages, view, rebuilt) as any[]
const withPromptBlock = (system: unknown, block: string) =>
  messagesDoor.withRecall({ system, messages: [] }, block, undefined).system

const body: any = {
  system: 'You are Claude Code.',
  messages: [
    { role: 'user', content: 'hi' },
    {
      role: 'assistant',
      content: [
        { type: 'text', text: 'Reading.' },
        { type: 'tool_use', id: 'toolu_1', name: 'Read', input: { file_path: '/a' } },
        { type: 'tool_use', id: 'toolu_2', name: 'Bash', input: { command: 'ls' } },
      ],
    },
    {
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_1', content: 'one', is_error: true },
        {
          type: 'tool_result',
          tool_use_id: 'toolu_2',
          content: [
            { type: 'text', text: 'a', cache_control: { type: 'ephemeral' } },
            { type: 'text', text: 'b' },
          ],
          cache_control: { type: 'ephemeral' },
        },
        { type: 'text', text: '<system-reminder>x</system-reminder>' },
      ],
    },
  ],
}

describe('Anthropic messages as chat', () => {
  test('tool_use becomes tool calls, each tool_result a tool message, the rest a user message', () => {
    const view = toView(body)
    assert.deepEqual(
      view.messages.map((m: any) => m.role),
      ['user', 'assistant', 'tool', 'tool', 'user'],
    )
    assert.deepEqual(view.origins, [0, 1, 2, 2, 2])
    assert.equal(view.messages[1]!.content, 'Reading.')
    assert.deepEqual(view.messages[1]!.tool_calls![0]!.function, {
      name: 'Read',
      arguments: '{"file_path":"/a"}',
    })
    assert.equal(view.messages[2]!.tool_call_id, 'toolu_1')
    assert.deepEqual(view.messages[3]!.content, [
      { type: 'text', text: 'a' },
      { type: 'text', text: 'b' },
    ])
  })

  test('renderings go back into the tool_result blocks; every other field stays', () => {
    const view = toView(body)
    const rebuilt = view.messages.map((m: any) =>
      m.role === 'tool' ? { ...m, content: `[#${m.tool_call_id}]` } : m,
    )
    const out = writeBack(body, view, rebuilt)
    assert.equal(out[0], body.messages[0], 'untouched messages are the same objects')
    assert.equal(out[1], body.messages[1])
    assert.deepEqual(out[2]!.content, [
      { type: 'tool_result', tool_use_id: 'toolu_1', content: '[#toolu_1]', is_error: true },
      {
        type: 'tool_result',
        tool_use_id: 'toolu_2',
        content: [{ type: 'text', text: '[#toolu_2]', cache_control: { type: 'ephemeral' } }],
        cache_control: { type: 'ephemeral' },
      },
      { type: 'text', text: '<system-reminder>x</system-reminder>' },
    ])
    assert.equal((body.messages[2]!.content as any[])[0].content, 'one', 'the input is not changed')
  })

  test('a summary gets its table written back', () => {
    const summary: any = {
      messages: [{ role: 'user', content: 'This session is being continued…' }],
    }
    const view = toView(summary)
    const rebuilt = view.messages.map((m: any, i: number) =>
      i === 0 ? { ...m, content: m.content + '\n\nTABLE' } : m,
    )
    assert.equal(
      writeBack(summary, view, rebuilt)[0]!.content,
      'This session is being continued…\n\nTABLE',
    )
  })

  test('the prompt block goes at the end of the system prompt, without a breakpoint', () => {
    assert.equal(withPromptBlock('S', 'B'), 'S\n\nB')
    assert.equal(withPromptBlock(undefined, 'B'), 'B')
    const system = [{ type: 'text', text: 'S', cache_control: { type: 'ephemeral' } }]
    assert.deepEqual(withPromptBlock(system, 'B'), [...system, { type: 'text', text: 'B' }])
  })
})

describe('Messages answers restored in place', () => {
  test("a recall's results and the agent's results beside it make one user turn", () => {
    const restored = {
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 'r1', content: '[#0002] recalled' }],
    }
    const next = {
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: 'b1', content: '[#0003] ls' }],
    }
    assert.deepEqual(messagesDoor.join!(restored, next), {
      role: 'user',
      content: [...restored.content, ...next.content],
    })
    assert.equal(messagesDoor.join!({ role: 'assistant', content: [] }, next), undefined)
  })
})
