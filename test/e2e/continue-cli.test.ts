/**
 * The real Continue CLI (`cn`, headless with -p) through the proxy, against a scripted model on
 * the Chat Completions API: its Read answers `Content of PATH:` and the file, which the proxy
 * brackets and stubs as a read; its List and Search repeated are "Same result as"; a long Bash
 * output is capped and recalled by the proxy itself; Edit answers with the diff; a read
 * after the edit is whole again, and an empty file is `empty`.
 */
import assert from 'node:assert/strict'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import {
  agentBinary,
  continueConfig,
  describeRun,
  isolatedEnv,
  makeLiveProject,
  runAgent,
} from './live/agents.js'
import type { Call } from './live/model.js'
import { scriptedRun } from './live/rig.js'

const FINAL = 'Continue CLI: read, listed, searched, ran, recalled and edited.'
const SEARCH = 'function compute1'

/** The session the model plays: one call a step, then the final answer. */
const STEPS: Call[] = [
  { name: 'Read', args: { filepath: 'src/big.ts' } },
  { name: 'Read', args: { filepath: 'src/big.ts' } },
  { name: 'List', args: { dirpath: 'src' } },
  { name: 'List', args: { dirpath: 'src' } },
  { name: 'Search', args: { pattern: SEARCH, path: 'src' } },
  { name: 'Search', args: { pattern: SEARCH, path: 'src' } },
  { name: 'Bash', args: { command: 'seq 1 1500' } },
  { name: 'recall', args: { id: '#0007', offset: 700, limit: 10 } },
  { name: 'Read', args: { filepath: 'src/util.ts' } },
  // cn offers MultiEdit to the models it deems capable, Edit to the others (this one).
  {
    name: 'Edit',
    args: { file_path: 'src/util.ts', old_string: 'return a + b;', new_string: 'return b + a;' },
  },
  { name: 'Read', args: { filepath: 'src/util.ts' } },
  { name: 'Read', args: { filepath: 'empty.txt' } },
]

const isMain = (json: any) => (json?.tools ?? []).some((t: any) => t?.function?.name === 'Read')

test(
  'the real Continue CLI: reads bracketed and stubbed, repeats deduped, output capped and recalled, edits diffed',
  { timeout: 150_000 },
  async () => {
    const binary = agentBinary('continue')
    const project = makeLiveProject('continue')
    writeFileSync(join(project.root, 'empty.txt'), '')
    const live = await scriptedRun(project, STEPS, FINAL, isMain)
    const { rig, stop } = live
    try {
      const config = continueConfig(`${rig.tap.url}/v1`, project)
      const run = await runAgent(binary, ['-p', 'Look around src.', '--config', config, '--auto'], {
        cwd: project.root,
        env: isolatedEnv(project.home),
        timeoutMs: 90_000,
        stop: stop.signal,
      })
      const about = describeRun(run)
      assert.equal(run.code, 0, about)
      assert.ok(run.stdout.includes(FINAL), about)

      const results = live.lastResults()
      assert.equal(results.length, STEPS.length, results.map((r) => r.slice(0, 60)).join('\n'))
      const [read, reread, list, relist, search, research, seq, recall, util, edit, after, empty] =
        results as [string, ...string[]]
      // Read: `Content of PATH:` and the whole file, under a read's bracket; again, a stub.
      const bracket =
        /^\[#0001 src\/big\.ts lines 1-301 of 301 sha ([0-9a-f]{8})\]\nContent of src\/big\.ts:\n/
      const sha = bracket.exec(read)?.[1]
      assert.ok(sha, read.slice(0, 120))
      assert.equal(
        reread,
        `[#0002 src/big.ts lines 1-301 of 301 sha ${sha}] Unchanged since #0001, which already shows lines 1-301.`,
      )
      // List and Search: the same answer twice is "Same result as".
      assert.match(list!, /^\[#0003\]\nFiles in /)
      assert.equal(relist, '[#0004] Same result as #0003.')
      assert.match(search!, /^\[#0005\]\nSearch results for pattern /)
      assert.equal(research, '[#0006] Same result as #0005.')
      // Bash: cn keeps the last 1,000 lines of 1,500 itself, under a line saying so; the proxy
      // caps that to its head and tail, and answers the recall of its middle from its store.
      const sent = rig.tap.exchanges.filter((e) => isMain(e.json)).at(-1)!.json.messages as any[]
      const output = String(sent.filter((m) => m.role === 'tool')[6].content)
      assert.match(output, /^\(previous 501 lines truncated\)\n/)
      const lines = output.replace(/\n$/, '').split('\n')
      assert.equal(
        seq,
        `[#0007]\n${lines.slice(0, 200).join('\n')}\n[${lines.length - 300} lines elided, full output #0007]\n${lines.slice(-100).join('\n')}\n`,
      )
      assert.equal(
        recall,
        `[#0008 recall #0007 lines 700-709 of ${lines.length}]\n${lines.slice(699, 709).join('\n')}`,
      )
      // An edit answers with its diff; the file read after it is whole, with its new hash.
      assert.match(util!, /^\[#0009 src\/util\.ts lines 1-7 of 7 sha ([0-9a-f]{8})\]\nContent of /)
      assert.match(edit!, /^\[#000a src\/util\.ts sha [0-9a-f]{8}\]\n@@ -1,\d+ \+1,\d+ @@\n/)
      assert.match(edit!, /\n-  return a \+ b;\n\+  return b \+ a;\n/)
      const newSha = /^\[#000b src\/util\.ts lines 1-7 of 7 sha ([0-9a-f]{8})\]\nContent of /.exec(
        after!,
      )?.[1]
      assert.ok(newSha, after!.slice(0, 120))
      assert.ok(
        edit!.startsWith(`[#000a src/util.ts sha ${newSha}]`),
        'the diff names the new hash',
      )
      assert.equal(empty, '[#000c empty.txt empty sha e3b0c442]\nContent of empty.txt:\n')

      // The agent never sees recall; every request after the first goes on from the one before.
      live.assertClean('Continue')
    } finally {
      await rig.close()
    }
  },
)
