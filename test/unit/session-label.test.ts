import assert from 'node:assert/strict'
import { test } from 'node:test'
import { sessionLabel } from '../../src/stats/label.js'

test("a session's label: agent, model and first words, on every wire format", () => {
  // Claude Code: reminders first, the prompt last, in one user message.
  const claude = sessionLabel(
    {
      model: 'claude-sonnet-4-5',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: '<system-reminder>\n# Environment\n</system-reminder>' },
            { type: 'text', text: 'Fix the failing\n  test in util.ts' },
          ],
        },
      ],
    },
    'claude-cli/2.1.332 (external, sdk-cli)',
  )
  assert.deepEqual(claude, {
    agent: 'claude-cli/2.1.332',
    model: 'claude-sonnet-4-5',
    title: 'Fix the failing test in util.ts',
  })
  // Codex: input items, the user's text in input_text parts; a system message comes first.
  const codex = sessionLabel(
    {
      model: 'gpt-5-codex',
      input: [
        { type: 'message', role: 'developer', content: 'rules' },
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'x'.repeat(80) }] },
      ],
    },
    null,
  )
  assert.deepEqual(codex, { model: 'gpt-5-codex', title: 'x'.repeat(59) + '…' })
  // Codex 0.171: its AGENTS.md and its environment come as the user's before the task.
  const context = (text: string) => ({
    type: 'message',
    role: 'user',
    content: [{ type: 'input_text', text }],
  })
  const codexContext = sessionLabel(
    {
      input: [
        context('# AGENTS.md instructions for /w\n\n<INSTRUCTIONS>\nBe terse.\n</INSTRUCTIONS>'),
        context('<environment_context>\n  <cwd>/w</cwd>\n</environment_context>'),
        context('Add a test for parse()'),
      ],
    },
    'codex_exec/0.171.0 (Debian; x86_64)',
  )
  assert.equal(codexContext.title, 'Add a test for parse()')
  // Kilo, Cline: the task, then the workspace's details in a part of their own.
  const kilo = sessionLabel(
    {
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: '"Summarise src/big.ts."' },
            {
              type: 'text',
              text: '\n\n<environment_details>\nCurrent time: now\n</environment_details>',
            },
          ],
        },
      ],
    },
    null,
  )
  assert.equal(kilo.title, '"Summarise src/big.ts."')
  assert.deepEqual(sessionLabel({ messages: [{ role: 'user', content: '' }] }, ''), {})
})
