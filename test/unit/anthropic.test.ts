import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import {
  toChat,
  withPromptBlock,
  writeBack,
  type MessagesRequest,
} from '../../src/formats/anthropic/messages.js'

const body: MessagesRequest = {
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
    const view = toChat(body)
    assert.deepEqual(
      view.messages.map((m) => m.role),
      ['system', 'user', 'assistant', 'tool', 'tool', 'user'],
    )
    assert.equal(view.messages[2]!.content, 'Reading.')
    assert.deepEqual(view.messages[2]!.tool_calls![0]!.function, {
      name: 'Read',
      arguments: '{"file_path":"/a"}',
    })
    assert.equal(view.messages[3]!.tool_call_id, 'toolu_1')
    assert.deepEqual(view.messages[4]!.content, [
      { type: 'text', text: 'a' },
      { type: 'text', text: 'b' },
    ])
  })

  test('renderings go back into the tool_result blocks; every other field stays', () => {
    const view = toChat(body)
    const rebuilt = view.messages.map((m) =>
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
    const summary: MessagesRequest = {
      messages: [{ role: 'user', content: 'This session is being continued…' }],
    }
    const view = toChat(summary)
    const rebuilt = view.messages.map((m, i) =>
      i === 1 ? { ...m, content: m.content + '\n\nTABLE' } : m,
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
