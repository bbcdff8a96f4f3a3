/**
 * Claude Code 2.1.332's reads, edits and writes of awkward files, as the real CLI answered them
 * (test/fixtures/agents/claude-code/reads-2.1.332.json: captured through the proxy, each result
 * with its `<system-reminder>` trailers, the file before and after the call), replayed turn by
 * turn through the /v1/messages door: with the project as the workspace (each file as it was
 * when the result came) and blind.
 */
import assert from 'node:assert/strict'
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { createStats } from '../../src/stats/index.js'
import { createStore } from '../../src/store/index.js'
import { createWorkspace } from '../../src/workspace/index.js'
import { claudeAnswer } from '../helpers/fake-anthropic.js'
import { startFakeUpstream } from '../helpers/fake-upstream.js'
import { postTo, startProxy } from '../helpers/proxy.js'

interface Sample {
  readonly call: { name: string; input: Record<string, unknown> }
  readonly content: unknown
  readonly is_error: boolean
  readonly file: string
  readonly before: string | null
  readonly after: string | null
}

const FIXTURE = new URL('../fixtures/agents/claude-code/reads-2.1.332.json', import.meta.url)
const CAPTURED_ROOT = '/work/project'
const TOOLS = ['Bash', 'Edit', 'Read', 'Write'].map((name) => ({
  name,
  description: name,
  input_schema: { type: 'object', properties: {} },
}))

const text = (content: any): string =>
  typeof content === 'string'
    ? content
    : content
        .filter((p: any) => p.type === 'text')
        .map((p: any) => p.text)
        .join('\n')
const REMINDERS = /(?:\s*<system-reminder>[\s\S]*?<\/system-reminder>)+\s*$/

/** The samples through a fresh proxy, one turn each; the upstream's last results, in order. */
async function replay(workspace: boolean) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), 'lembas-cc-reads-')))
  const raw = (await import('node:fs')).readFileSync(FIXTURE, 'utf8')
  const samples = (JSON.parse(raw.split(CAPTURED_ROOT).join(root)) as { samples: Sample[] }).samples
  const upstream = await startFakeUpstream((request, index) =>
    claudeAnswer(request, [{ type: 'text', text: 'ok' }], index),
  )
  const stats = createStats()
  const proxy = await startProxy({
    upstreamUrl: upstream.url,
    store: await createStore('memory:', { idleTtlMs: 86_400_000 }),
    stats,
    ...(workspace ? { workspace: await createWorkspace([root]) } : {}),
  })
  try {
    // Every file as it was before the first call.
    for (const sample of samples) {
      const first = samples.find((s) => s.file === sample.file)!
      if (first.before !== null) writeFileSync(join(root, sample.file), first.before)
    }
    const messages: any[] = [{ role: 'user', content: 'Work through the task.' }]
    for (const [i, sample] of samples.entries()) {
      if (sample.after !== null) writeFileSync(join(root, sample.file), sample.after)
      messages.push(
        {
          role: 'assistant',
          content: [
            {
              type: 'tool_use',
              id: `toolu_${i}`,
              name: sample.call.name,
              input: sample.call.input,
            },
          ],
        },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: `toolu_${i}`,
              content: sample.content,
              ...(sample.is_error ? { is_error: true } : {}),
            },
          ],
        },
      )
      const reply = await postTo(proxy.url + '/v1/messages', {
        model: 'claude-sonnet-4-5',
        max_tokens: 1024,
        tools: TOOLS,
        metadata: { user_id: 'user_x_account__session_00000000-0000-4000-8000-000000000001' },
        messages,
      })
      assert.equal(reply.status, 200, reply.text)
    }
    const last = upstream.requests.at(-1)!.json
    const results: string[] = last.messages.flatMap((m: any) =>
      Array.isArray(m.content)
        ? m.content.filter((b: any) => b.type === 'tool_result').map((b: any) => text(b.content))
        : [],
    )
    return { root, samples, results, stats: stats.snapshot() }
  } finally {
    await proxy.close()
    await upstream.close()
    rmSync(root, { recursive: true, force: true })
  }
}

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
      const empty = join(root, 'empty.txt')
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
  })
}
