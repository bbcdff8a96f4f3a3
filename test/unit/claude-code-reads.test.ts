/**
 * Claude Code 2.1.332's reads, edits and writes of awkward files, as the real CLI answered them
 * (test/fixtures/agents/claude-code/reads-2.1.332.json: captured through the proxy, each result
 * with its `<system-reminder>` trailers, the file before and after the call), replayed turn by
 * turn through the /v1/messages door: with the project as the workspace (each file as it was
 * when the result came) and blind.
 */
import assert from 'node:assert/strict'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { replaySamples, resultText as text, type Sample } from '../helpers/claude-samples.js'
import { claudeAnswer } from '../helpers/fake-anthropic.js'

const FIXTURE = new URL('../fixtures/agents/claude-code/reads-2.1.332.json', import.meta.url)
const REMINDERS = /(?:\s*<system-reminder>[\s\S]*?<\/system-reminder>)+\s*$/
const replay = (workspace: boolean) => replaySamples(FIXTURE, workspace)

const index = (samples: readonly Sample[], file: string, nth = 0) =>
  samples.flatMap((s, i) => (s.file === file && s.call.name === 'Read' ? [i] : []))[nth]!
const hex = (n: number) => '#' + (n + 1).toString(16).padStart(4, '0')

for (const workspace of [true, false]) {
  describe(`Claude Code 2.1.332's awkward files, ${workspace ? 'workspace' : 'blind'}`, () => {
    test('a notebook is no lines; an empty file is empty behind the reminders after it', async () => {
      const { root, samples, results, stats } = await replay(workspace)
      assert.equal(results.length, samples.length)
      assert.equal(stats.totals.unrecognised, 0, JSON.stringify(stats.unrecognisedByTool))
      // What the CLI appended stays after the rendering; every result has its id.
      results.forEach((result, i) => {
        assert.match(result, new RegExp(`^\\[${hex(i)}[ \\]]`))
        assert.equal(
          REMINDERS.exec(result)?.[0].trim(),
          REMINDERS.exec(text(samples[i]!.content))?.[0].trim(),
        )
      })
      // A notebook's cells are the tool's view, not the file's lines: no bracket, no stub.
      for (const nth of [0, 1]) {
        const at = index(samples, 'nb.ipynb', nth)
        assert.match(results[at]!, new RegExp(`^\\[${hex(at)}\\]\\n<cell id="cell-0">`))
      }
      // An empty file, with the CLI's own reminders after its warning: empty, no lines claimed.
      const empty = join(root, 'project', 'empty.txt')
      for (const nth of [0, 1]) {
        const at = index(samples, 'empty.txt', nth)
        const bracket = workspace
          ? `[${hex(at)} ${empty} empty sha e3b0c442]`
          : `[${hex(at)} ${empty} lines 1-0 of 0]`
        assert.ok(
          results[at]!.startsWith(
            bracket +
              '\n<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>\n\n<system-reminder>',
          ),
          results[at],
        )
      }
      // Past the end: the CLI's warning, as it came.
      const past = samples.findIndex((s) => s.call.input['offset'] === 500)
      assert.match(
        results[past]!,
        new RegExp(
          `^\\[${hex(past)}\\]\\n<system-reminder>Warning: the file exists but is shorter`,
        ),
      )
      // A file past the size limit: the CLI's refusal, no line of it.
      const huge = samples.findIndex((s) => s.file === 'huge.txt')
      assert.match(
        results[huge]!,
        new RegExp(`^\\[${hex(huge)}\\]\\nFile content \\(704KB\\) exceeds`),
      )
      // An image: the reminder after it is no line of the file.
      const png = samples.findIndex((s) => s.file === 'pic.png')
      assert.equal(results[png], `[${hex(png)}]\n` + text(samples[png]!.content))
      // A CRLF file's lines (the CLI shows them without CR) and a one-line edit of it: the real change.
      const crlf = index(samples, 'crlf.txt')
      assert.match(
        results[crlf]!,
        new RegExp(
          `^\\[${hex(crlf)} \\S+crlf\\.txt lines 1-4${workspace ? ' of 4 sha [0-9a-f]{8}' : ''}\\]\\n1\\talpha line\\n`,
        ),
      )
      const cr = workspace ? '\r' : ''
      assert.ok(
        results[crlf + 1]!.includes(
          `\n@@ -1,4 +1,4 @@\n alpha line${cr}\n-beta line${cr}\n+BETA LINE edited${cr}\n gamma line${cr}\n delta line${cr}\n`,
        ),
        JSON.stringify(results[crlf + 1]),
      )
    })

    test("recall of an image's id shows its text, not the reminders the CLI put beside it", async () => {
      const raw = (await import('node:fs')).readFileSync(FIXTURE, 'utf8')
      const count = (JSON.parse(raw) as { samples: Sample[] }).samples.length
      let png = -1
      const { requests } = await replaySamples(FIXTURE, workspace, (request, index) => {
        // After the last sample, the model recalls the image's result; then it answers.
        if (index !== count - 1) return claudeAnswer(request, [{ type: 'text', text: 'ok' }], index)
        const results = request.json.messages.flatMap((m: any) =>
          Array.isArray(m.content) ? m.content.filter((b: any) => b.type === 'tool_result') : [],
        )
        png = results.findIndex(
          (b: any) => Array.isArray(b.content) && b.content[0].type === 'image',
        )
        const id = hex(png).slice(1)
        return claudeAnswer(
          request,
          [{ type: 'tool_use', id: 'toolu_r', name: 'recall', input: { id } }],
          index,
        )
      })
      assert.ok(png >= 0)
      const round = requests.at(-1)!.json.messages.at(-1)
      assert.equal(round.content[0].tool_use_id, 'toolu_r')
      // Its text was the CLI's token count alone: nothing of the tool's own.
      assert.match(
        text(round.content[0].content),
        new RegExp(`^\\[#[0-9a-f]{4} recall ${hex(png)} empty\\]$`),
      )
    })
  })
}
