/**
 * A summary is known by its text less the agent's reminder parts (Qwen Code puts its
 * `<system-reminder>` parts before its `<state_snapshot>` from the second request on), and one
 * an earlier version stored under its whole text keeps the table it got then.
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { loadLoop } from '../../src/config/loop.js'
import { keys } from '../../src/session/records.js'
import { shortHash } from '../../src/session/identity.js'
import { compactionTables, summaryKey } from '../../src/session/tables.js'
import { createStore } from '../../src/store/index.js'
import type { ChatMessage } from '../../src/wire/chat.js'

const rules = loadLoop().context
const SNAPSHOT = '<state_snapshot>\n<overall_goal>Tidy app.ts.</overall_goal>\n</state_snapshot>'
const reminder = (text: string) => ({
  type: 'text',
  text: `<system-reminder>\n${text}\n</system-reminder>`,
})

test('reminder parts before a summary do not make it another summary', () => {
  const alone: ChatMessage = { role: 'user', content: [{ type: 'text', text: SNAPSHOT }] }
  const reminded: ChatMessage = {
    role: 'user',
    content: [
      reminder('Today is Monday.'),
      reminder('Plan mode is off.'),
      { type: 'text', text: SNAPSHOT },
    ],
  }
  assert.equal(summaryKey(reminded), summaryKey(alone))
  // A string summary, and one of reminders alone, are known by their whole text as before.
  const string: ChatMessage = { role: 'user', content: SNAPSHOT }
  assert.equal(summaryKey(string), shortHash('user\u0000' + SNAPSHOT))
  const only: ChatMessage = { role: 'user', content: [reminder('x')] }
  assert.equal(summaryKey(only), shortHash('user\u0000' + reminder('x').text))
  // Another summary text is another summary.
  assert.notEqual(summaryKey({ role: 'user', content: SNAPSHOT + ' ' }), summaryKey(string))
})

test('a summary stored under its whole text by an earlier version keeps its table', async () => {
  const store = await createStore('memory:', { idleTtlMs: 86_400_000 })
  const message: ChatMessage = {
    role: 'user',
    content: [reminder('Today is Monday.'), { type: 'text', text: SNAPSHOT }],
  }
  const whole = shortHash('user\u0000' + reminder('Today is Monday.').text + '\n' + SNAPSHOT)
  const table = '## Files read before this summary\n\n| app.ts | 1-3 of 3 | 1c9e04ab | #0001 |\n'
  await store.putIfAbsent('scope-1', [[keys.compaction(whole), JSON.stringify({ table })]])
  const found = await compactionTables([message], [0], 'scope-1', store, rules)
  assert.equal(found.tables.get(0), table)
  assert.equal(found.fresh, 0, 'not a new compaction')
  // Seen for the first time, it is one, counted once.
  const other: ChatMessage = { role: 'user', content: [{ type: 'text', text: SNAPSHOT + '!' }] }
  assert.equal((await compactionTables([other], [0], 'scope-1', store, rules)).fresh, 1)
  assert.equal((await compactionTables([other], [0], 'scope-1', store, rules)).fresh, 0)
  await store.close()
})
