/**
 * Claude Code's Edit of a file that changed on disk since its Read (a shell command appended to
 * it), as the real CLI answered (test/fixtures/agents/claude-code/stale-edit-2.1.337.json): the
 * CLI says so in a note. With the workspace the diff comes from the file and the note stays
 * after it; blind, the change is not derived from the stale view (its sha would be wrong).
 */
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { replaySamples, resultText } from '../helpers/claude-samples.js'

const FIXTURE = new URL('../fixtures/agents/claude-code/stale-edit-2.1.337.json', import.meta.url)
const NOTE =
  '(note: the file had been modified on disk since you last read it — the edit applied cleanly, but the file contains other changes not in your context. Read it before edits that depend on surrounding content.)'
const REMINDER =
  /\n\n<system-reminder>\n<total_tokens>\d+ tokens left<\/total_tokens>\n<\/system-reminder>$/

test('with the workspace, the edit is its diff from the file, the note after it', async () => {
  const { samples, results, stats } = await replaySamples(FIXTURE, true)
  assert.equal(stats.totals.unrecognised, 0, JSON.stringify(stats.unrecognisedByTool))
  assert.ok(resultText(samples[2]!.content).includes(NOTE), 'the captured answer carries the note')
  const edit = results[2]!
  assert.match(
    edit,
    /^\[#0003 \S*src\/w\.ts sha [0-9a-f]{8}\]\n@@ -1,\d+ \+1,\d+ @@\n-alpha\n\+ALPHA\n/,
  )
  assert.ok(edit.replace(REMINDER, '').endsWith('\n' + NOTE), edit)
  assert.match(edit, REMINDER, 'the CLI trailer kept')
  // The read after it is whole: an edit ends the earlier read's standing as a stub target.
  assert.match(results[3]!, /^\[#0004 \S*src\/w\.ts lines 1-6 of 6 sha [0-9a-f]{8}\]\n1\tALPHA\n/)
})

test('blind, the stale view derives nothing: the answer as the CLI gave it, with its id', async () => {
  const { samples, results, stats } = await replaySamples(FIXTURE, false)
  assert.equal(stats.totals.unrecognised, 0, JSON.stringify(stats.unrecognisedByTool))
  assert.equal(results[2], '[#0003]\n' + resultText(samples[2]!.content))
  assert.match(results[3]!, /^\[#0004 \S*src\/w\.ts lines 1-6\b/)
})
