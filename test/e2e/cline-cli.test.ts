/**
 * The real Cline CLI (3.x, its "Cline 4" tools, headless) through the proxy, against a scripted
 * model on the Chat Completions API. Its answers are JSON (`[{"query":…,"result":…,"success":…}]`):
 * a read of a whole file gets a read's bracket and, again, a stub; `ls` and a search repeated are
 * "Same result as"; an edit answers with the diff; a `cat` of the file and a range of it after
 * a whole read are stubs of that read; a long command output is capped inside the JSON, and
 * the model's recall of its middle is answered by the proxy with the output's own lines.
 */
import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { agentBinary, describeRun, isolatedEnv, makeLiveProject, runAgent } from './live/agents.js'
import type { Call } from './live/model.js'
import { scriptedRun } from './live/rig.js'
import { sha8 } from '../helpers/workspace.js'

const FINAL = 'Cline CLI: read, listed, searched, edited and read again.'

/** The session the model plays (absolute paths, as Cline's tools ask), then the final answer. */
function steps(big: string, util: string, readme: string, huge: string): Call[] {
  return [
    { name: 'read_files', args: { files: [{ path: big }] } },
    { name: 'read_files', args: { files: [{ path: big }] } },
    { name: 'run_commands', args: { commands: ['ls src'] } },
    { name: 'run_commands', args: { commands: ['ls src'] } },
    { name: 'search_codebase', args: { queries: ['function compute1\\('] } },
    { name: 'search_codebase', args: { queries: ['function compute1\\('] } },
    { name: 'read_files', args: { files: [{ path: util }] } },
    { name: 'editor', args: { path: util, old_text: 'return a + b;', new_text: 'return b + a;' } },
    { name: 'read_files', args: { files: [{ path: util }] } },
    { name: 'run_commands', args: { commands: ['cat src/util.ts'] } },
    { name: 'read_files', args: { files: [{ path: util, start_line: 2, end_line: 3 }] } },
    { name: 'run_commands', args: { commands: ['seq 1 1500'] } },
    { name: 'recall', args: { id: '#000c', offset: 700, limit: 10 } },
    // Several files in one call: each read on its own, inside its own string of the answer.
    { name: 'read_files', args: { files: [{ path: big }, { path: readme }] } },
    { name: 'read_files', args: { files: [{ path: readme }] } },
    { name: 'read_files', args: { files: [{ path: util }, { path: `${util}.missing` }] } },
    // A file past Cline's 8,000 characters a result: lines 1-150 whole, then the whole file and
    // lines 1-600, which Cline cuts in the middle (head, notice, tail).
    { name: 'read_files', args: { files: [{ path: huge, start_line: 1, end_line: 150 }] } },
    { name: 'read_files', args: { files: [{ path: huge }] } },
    { name: 'read_files', args: { files: [{ path: huge, start_line: 1, end_line: 600 }] } },
  ]
}

const isMain = (json: any) =>
  (json?.tools ?? []).some((t: any) => t?.function?.name === 'read_files')

/** Processes still running with the project in their command line (a hub daemon, say). */
function leftBehind(root: string): string[] {
  return readdirSync('/proc').flatMap((pid) => {
    if (!/^\d+$/.test(pid)) return []
    try {
      const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ')
      return command.includes(root) ? [`${pid}: ${command}`] : []
    } catch {
      return []
    }
  })
}

test(
  'the real Cline CLI: JSON answers bracketed, stubbed, deduped and diffed',
  { timeout: 150_000 },
  async () => {
    const binary = agentBinary('cline')
    const project = makeLiveProject('cline')
    const readme = join(project.root, 'README.md')
    const huge = join(project.root, 'src', 'huge.ts')
    const hugeLines = Array.from(
      { length: 1000 },
      (_, i) => `const value${String(i + 1).padStart(4, '0')} = compute(${i + 1}, "abcdefghij");`,
    )
    writeFileSync(huge, hugeLines.join('\n') + '\n')
    const plan = steps(project.big, project.util, readme, huge)
    const live = await scriptedRun(project, plan, FINAL, isMain)
    const { rig, stop } = live
    try {
      // Its session runs in this process (`local`), not in a hub daemon that would outlive the run.
      const env = isolatedEnv(project.home, { CLINE_SESSION_BACKEND_MODE: 'local' })
      // The provider: OpenAI-compatible at the proxy (written into the scratch home).
      execFileSync(
        binary,
        ['auth', '-p', 'openai', '-k', 'live-key', '-m', 'live-model', '-b', `${rig.tap.url}/v1`],
        { cwd: project.root, env, stdio: 'pipe', timeout: 60_000 },
      )
      const run = await runAgent(binary, ['Look around src.'], {
        cwd: project.root,
        env,
        timeoutMs: 90_000,
        stop: stop.signal,
      })
      const about = describeRun(run)
      assert.equal(run.code, 0, about)
      assert.deepEqual(leftBehind(project.root), [], 'a Cline process outlived the run')
      assert.ok(run.stdout.includes(FINAL), about)

      const results = live.lastResults()
      assert.equal(results.length, plan.length, results.map((r) => r.slice(0, 60)).join('\n'))
      const [
        read,
        reread,
        ls,
        rels,
        search,
        research,
        util,
        edit,
        after,
        cat,
        range,
        seq,
        recall,
        both,
        readmeAgain,
        utilAndMissing,
        hugeHead,
        hugeWhole,
        hugeTo600,
      ] = results as [string, ...string[]]
      const big = project.big
      const sha = new RegExp(
        `^\\[#0001 ${big} lines 1-301 of 301 sha ([0-9a-f]{8})\\]\\n\\[\\{"query":`,
      ).exec(read)?.[1]
      assert.ok(sha, read.slice(0, 160))
      assert.equal(
        reread,
        `[#0002 ${big} lines 1-301 of 301 sha ${sha}] Unchanged since #0001, which already shows lines 1-301.`,
      )
      assert.match(ls!, /^\[#0003\]\n\[\{"query":"ls src"/)
      assert.equal(rels, '[#0004] Same result as #0003.')
      assert.match(search!, /^\[#0005\]\n/)
      assert.equal(research, '[#0006] Same result as #0005.')
      const util1 = new RegExp(
        `^\\[#0007 ${project.util} lines 1-7 of 7 sha ([0-9a-f]{8})\\]`,
      ).exec(util!)?.[1]
      assert.ok(util1, util!.slice(0, 160))
      const edited = new RegExp(`^\\[#0008 ${project.util} sha ([0-9a-f]{8})\\]\\n@@ `).exec(
        edit!,
      )?.[1]
      assert.ok(edited && edited !== util1, edit!.slice(0, 200))
      assert.match(edit!, /\n-  return a \+ b;\n\+  return b \+ a;\n/)
      assert.ok(
        after!.startsWith(`[#0009 ${project.util} lines 1-7 of 7 sha ${edited}]\n`),
        after!.slice(0, 160),
      )
      // The file again through the shell, and a range of it: both inside #0009, unchanged.
      assert.equal(
        cat,
        `[#000a src/util.ts lines 1-7 of 7 sha ${edited}] Unchanged since #0009, which already shows lines 1-7.`,
      )
      assert.equal(
        range,
        `[#000b ${project.util} lines 2-3 of 7 sha ${edited}] Unchanged since #0009, which already shows lines 1-7.`,
      )

      // 1,500 lines of output inside the JSON answer: capped there, the answer still JSON; the
      // recall of its middle, answered by the proxy, shows the output's own lines.
      assert.match(seq!, /^\[#000c\]\n\[\{"query":"seq 1 1500","result":"/)
      const answer = JSON.parse(seq!.slice('[#000c]\n'.length)) as { result: string }[]
      const numbers = (from: number, to: number) =>
        Array.from({ length: to - from + 1 }, (_, i) => from + i).join('\n')
      assert.equal(
        answer[0]!.result,
        `${numbers(1, 200)}\n[1200 lines elided, full output #000c]\n${numbers(1401, 1500)}\n`,
      )
      assert.equal(recall, `[#000d recall #000c lines 700-709 of 1500]\n${numbers(700, 709)}`)

      // read_files of big.ts and README.md: big.ts unchanged since #0001 (a stub in its own
      // string), README.md read (its bracket in its string); the answer still JSON.
      type Answer = { query: string; result: string; success: boolean; error?: string }[]
      const answerOf = (text: string, id: string) => {
        assert.ok(text.startsWith(`[${id}]\n[`), text.slice(0, 120))
        return JSON.parse(text.slice(id.length + 3)) as Answer
      }
      const [bigAgain, readmeFirst] = answerOf(both!, '#000e')
      assert.equal(bigAgain!.query, big)
      assert.equal(
        bigAgain!.result,
        `[#000e ${big} lines 1-301 of 301 sha ${sha}] Unchanged since #0001, which already shows lines 1-301.`,
      )
      const readmeSha = sha8(readme)
      assert.equal(
        readmeFirst!.result,
        `[#000e ${readme} lines 1-2 of 2 sha ${readmeSha}]\n1 | # demo project\n2 | A tiny scratch project for the live agent test.`,
      )
      // README.md alone: a stub of the call that read it with big.ts.
      assert.equal(
        readmeAgain,
        `[#000f ${readme} lines 1-2 of 2 sha ${readmeSha}] Unchanged since #000e, which already shows lines 1-2.`,
      )
      // util.ts unchanged since #0009 beside a file that is not there: the error as Cline wrote it.
      const [utilAgain, missing] = answerOf(utilAndMissing!, '#0010')
      assert.equal(
        utilAgain!.result,
        `[#0010 ${project.util} lines 1-7 of 7 sha ${edited}] Unchanged since #0009, which already shows lines 1-7.`,
      )
      assert.equal(missing!.success, false)
      assert.equal(missing!.result, '')
      assert.match(missing!.error ?? '', /ENOENT/)

      // The file past Cline's cut: lines 1-150 whole; then the whole file and lines 1-600, cut in
      // the middle by Cline, each placed by the lines before the cut and sent in full (a stub of
      // #0011 would hide the tail after the cut); no result taken for drift.
      const hugeSha = sha8(huge)
      assert.match(
        hugeHead!,
        new RegExp(`^\\[#0011 ${huge} lines 1-150 of 1000 sha ${hugeSha}\\]\\n\\[`),
      )
      for (const [text, id] of [
        [hugeWhole!, '#0012'],
        [hugeTo600!, '#0013'],
      ] as const) {
        const bracket = new RegExp(
          `^\\[${id} ${huge} lines 1-(\\d+) of 1000 sha ${hugeSha}\\]\\n\\[`,
        )
        const end = Number(bracket.exec(text)?.[1])
        assert.ok(end > 50 && end < 150, text.slice(0, 200))
        assert.match(text, /\.\.\.\[truncated \d+ chars\]\.\.\./)
        assert.doesNotMatch(text, /Unchanged since/)
      }
      live.assertClean('Cline')
    } finally {
      await rig.close()
    }
  },
)
