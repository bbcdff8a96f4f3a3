import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { signalledSummary, summaryIndices } from '../../src/session/summaries.js'
import { defaultProfile } from '../../src/tools/index.js'
import { isMarker } from '../../src/pipeline/shape.js'
import type { ChatMessage } from '../../src/wire/chat.js'

const markers = defaultProfile.compaction
const system: ChatMessage = { role: 'system', content: 'You are an agent.' }

/** Each agent's compaction as it shows on the wire (research/agents.md §1.7), and where its summary is. */
const CASES: { agent: string; messages: ChatMessage[]; summary: number }[] = [
  {
    agent: 'Claude Code',
    messages: [
      system,
      {
        role: 'user',
        content:
          'This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\nSummary:\n1. Primary Request and Intent:',
      },
    ],
    summary: 1,
  },
  {
    agent: 'Cline classic (a tool result)',
    messages: [
      system,
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: 'c', type: 'function', function: { name: 'summarize_task', arguments: '{}' } },
        ],
      },
      {
        role: 'tool',
        tool_call_id: 'c',
        content:
          '\nThis session is being continued from a previous conversation that ran out of context. The conversation is summarized below:\nWe did X.',
      },
    ],
    summary: 2,
  },
  {
    agent: 'Cline 4',
    messages: [system, { role: 'user', content: 'Context summary:\n\n## Goal\nX' }],
    summary: 1,
  },
  {
    agent: 'opencode (the summary follows the question)',
    messages: [
      system,
      { role: 'user', content: 'What did we do so far?' },
      { role: 'assistant', content: '## Goal\nX\n## Instructions\n' },
    ],
    summary: 2,
  },
  {
    agent: 'Qwen Code',
    messages: [
      system,
      {
        role: 'user',
        content: [
          {
            type: 'text',
            text: '<state_snapshot>\nX\n</state_snapshot>\n\nResume the prior task using the summary above.',
          },
        ],
      },
      { role: 'assistant', content: 'Got it. Thanks for the additional context!' },
    ],
    summary: 1,
  },
  {
    agent: 'Codex',
    messages: [
      system,
      {
        role: 'user',
        content:
          'Another language model started to solve this problem and produced a summary of its thinking process. You also have access to the state of the tools…',
      },
    ],
    summary: 1,
  },
  {
    agent: 'Roo Code',
    messages: [system, { role: 'user', content: '## Conversation Summary\nX' }],
    summary: 1,
  },
  {
    agent: 'Continue (in the system prompt)',
    messages: [
      { role: 'system', content: 'You are an agent.\n\nPrevious conversation summary:\n\n X' },
    ],
    summary: 0,
  },
  {
    agent: 'OpenHands',
    messages: [system, { role: 'user', content: 'USER_CONTEXT: fix the bug\nCOMPLETED: ...' }],
    summary: 1,
  },
  {
    agent: 'Goose (the summary precedes the notice)',
    messages: [
      system,
      { role: 'assistant', content: 'Summary of the conversation so far.' },
      {
        role: 'user',
        content:
          'Your context was compacted. The previous message contains a summary of the conversation so far.\nDo not mention that you read a summary.',
      },
    ],
    summary: 1,
  },
  {
    agent: 'Crush',
    messages: [
      system,
      {
        role: 'user',
        content: '## Current State\nX\n## Files & Changes\nY\n## Exact Next Steps\nZ',
      },
    ],
    summary: 1,
  },
]

describe("agents' compaction markers", () => {
  for (const { agent, messages, summary } of CASES) {
    test(`${agent}: the summary is message ${summary}`, () => {
      assert.deepEqual(summaryIndices(messages, markers), [summary])
    })
  }
  test("opencode's question opens the history after its compaction; asked later, it is the user's", () => {
    const asked: ChatMessage = { role: 'user', content: 'What did we do so far?' }
    const answer: ChatMessage = { role: 'assistant', content: 'We read two files.' }
    assert.deepEqual(summaryIndices([system, asked, answer], markers), [2])
    const later: ChatMessage[] = [
      system,
      { role: 'user', content: 'Fix it.' },
      answer,
      asked,
      answer,
    ]
    assert.deepEqual(summaryIndices(later, markers), [])
  })
  test('an ordinary conversation has no summary', () => {
    const messages: ChatMessage[] = [
      system,
      { role: 'user', content: 'What did we do so far? Tell me.' },
      { role: 'user', content: 'Summary: none' },
    ]
    assert.deepEqual(summaryIndices(messages, markers), [])
  })
  test('a summary after parts of its own: Claude Code, Qwen Code and Kilo put parts before it', () => {
    const parts = (...texts: string[]): ChatMessage => ({
      role: 'user',
      content: texts.map((text) => ({ type: 'text', text })),
    })
    const claude = parts(
      "<system-reminder>\nToday's date is 2026-12-05.\n</system-reminder>\n",
      'This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.',
    )
    const qwen = parts(
      '<system-reminder>\nskills\n</system-reminder>',
      '<state_snapshot>\n</state_snapshot>',
    )
    const kilo = parts(
      'What did we do so far?',
      '\n\n<environment_details>\n</environment_details>',
    )
    assert.deepEqual(summaryIndices([system, claude], markers), [1])
    assert.deepEqual(summaryIndices([system, qwen], markers), [1])
    assert.deepEqual(
      summaryIndices([system, kilo, { role: 'assistant', content: 'sum' }], markers),
      [2],
    )
    // Words the model wrote before the snapshot: Qwen's sentence after it still finds it.
    const prefixed = `Here it is.\n\n<state_snapshot>\n</state_snapshot>\n\nResume the prior task using the summary above. Continue from the last in-flight step;`
    assert.deepEqual(summaryIndices([system, { role: 'user', content: prefixed }], markers), [1])
  })
  test("the Continue CLI's summary opens the history, and only with cn's tools", () => {
    const messages: ChatMessage[] = [system, { role: 'assistant', content: 'We read big.ts.' }]
    const cn = new Set(['Read', 'List', 'Bash', 'Checklist', 'CheckBackgroundJob'])
    assert.deepEqual(summaryIndices(messages, markers, undefined, cn), [1])
    // Another client whose chat opens with the assistant's greeting: no compaction.
    assert.deepEqual(summaryIndices(messages, markers, undefined, new Set(['Read', 'Bash'])), [])
    // Only the first message after the system prompt.
    const later: ChatMessage[] = [system, { role: 'user', content: 'hi' }, messages[1]!]
    assert.deepEqual(summaryIndices(later, markers, undefined, cn), [])
  })
  test('a history that ends with a marker goes the full path next; an answer is no marker', () => {
    assert.equal(isMarker({ role: 'assistant', content: 'Done.' }, defaultProfile), false)
    // Cline's own notice, in a part after the task's.
    const notice = {
      role: 'user',
      content: [
        { type: 'text' as const, text: 'Fix it.' },
        { type: 'text' as const, text: '<SYSTEM_NOTICE>\nEarlier context was compacted. Summary:' },
      ],
    }
    assert.equal(isMarker(notice, defaultProfile), true)
  })
  test('the compaction header names a message, or the first one after the system prompt', () => {
    const messages: ChatMessage[] = [system, { role: 'user', content: 'our summary' }]
    assert.equal(signalledSummary('true', messages), 1)
    assert.equal(signalledSummary('0', messages), 0)
    assert.equal(signalledSummary('nonsense', messages), undefined)
    assert.deepEqual(summaryIndices(messages, markers, signalledSummary('true', messages)), [1])
  })
})
