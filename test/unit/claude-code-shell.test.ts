/**
 * Claude Code 2.1.332's Bash answers as the real CLI sent them
 * (test/fixtures/agents/claude-code/shell-2.1.332.json), through the /v1/messages door: a read
 * that failed is its error under an id (the CLI puts `Exit code N` first), never a file's lines
 * nor a stub's target; a read after a `cd` out of the project has the CLI's `Shell cwd was
 * reset to DIR` after it, which is no line of the file.
 */
import assert from 'node:assert/strict'
import { describe, test } from 'node:test'
import { replaySamples } from '../helpers/claude-samples.js'

const FIXTURE = new URL('../fixtures/agents/claude-code/shell-2.1.332.json', import.meta.url)
const hex = (n: number) => '#' + (n + 1).toString(16).padStart(4, '0')

for (const workspace of [true, false]) {
  describe(`Claude Code 2.1.332's shell reads, ${workspace ? 'workspace' : 'blind'}`, () => {
    test('a failed read is its error; the cwd notice is no line of the file', async () => {
      const { root, samples, results, stats } = await replaySamples(FIXTURE, workspace)
      assert.equal(results.length, samples.length)
      assert.equal(stats.totals.unrecognised, 0, JSON.stringify(stats.unrecognisedByTool))
      const command = (i: number) => String(samples[i]!.call.input['command'])
      // cat, head and sed of files that are not there, each twice or once: the error under its id.
      const failed = samples.flatMap((s, i) => (s.is_error ? [i] : []))
      assert.equal(failed.length, 6)
      for (const i of failed)
        assert.ok(results[i]!.startsWith(`[${hex(i)}]\nExit code `), `${command(i)}: ${results[i]}`)

      // A cd out of the project, then cat: the file's two lines, the notice after them.
      const cd = samples.findIndex((s) => String(s.call.input['command']).startsWith('cd '))
      const outside = `${root}/outside/o.txt`
      assert.ok(
        results[cd]!.startsWith(`[${hex(cd)} o.txt lines 1-2]\no1\no2\nShell cwd was reset to `),
        results[cd],
      )
      // The same again, and by its absolute path without a cd: stubs of that read, lines 1-2.
      for (const i of [
        cd + 1,
        samples.findIndex((s) => s.call.input['command'] === `cat ${outside}`),
      ])
        assert.ok(
          results[i]!.includes(`] Unchanged since ${hex(cd)}, which already shows lines 1-2.`),
          `${command(i)}: ${results[i]}`,
        )
      // A file of the project read after a cd elsewhere: a read with its bracket.
      const util = `${root}/project/src/util.ts`
      const away = samples.findIndex((s) => s.call.input['command'] === `cd /tmp && cat ${util}`)
      const bracket = workspace ? ` of 7 sha [0-9a-f]{8}` : ''
      assert.match(results[away]!, new RegExp(`^\\[${hex(away)} ${util} lines 1-7${bracket}\\]\\n`))
    })
  })
}
