/**
 * Failed runs and reads as the real CLIs answered them (test/fixtures/agents/shell-failures/
 * failed-runs.json: opencode 1.18.33, Kilo 7.7.7, Qwen Code 0.24.4, Codex 0.171.0): an agent's
 * own error (a shell `workdir` that is not there, a read tool's argument check, a write under a
 * file) and a complaint printed after the file are no file's lines, blind or with a workspace:
 * never a bracket, never a stub's target, never drift.
 */
import assert from 'node:assert/strict'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { resultFacts, type FileViews } from '../../src/pipeline/facts.js'
import { classifyCall, defaultProfile } from '../../src/tools/index.js'
import { createWorkspace } from '../../src/workspace/index.js'
import type { ToolDefinition } from '../../src/wire/chat.js'
import { makeProject } from '../helpers/workspace.js'

const none = new Map<string, ToolDefinition>()
const views: FileViews = { content: async () => undefined }
const UTIL =
  'export function add(a: number, b: number): number {\n  return a + b;\n}\n\n' +
  'export function mul(a: number, b: number): number {\n  return a * b;\n}\n'

interface Sample {
  readonly agent: string
  readonly call: { name: string; arguments: string }
  readonly result: string
}

function samples(project: string): Sample[] {
  const raw = readFileSync(
    new URL('../fixtures/agents/shell-failures/failed-runs.json', import.meta.url),
    'utf8',
  )
  return (JSON.parse(raw.split('/work/project').join(project)) as { results: Sample[] }).results
}

describe("the agents' failed runs and reads (the real CLIs)", () => {
  for (const mode of ['blind', 'workspace'] as const)
    test(`no file's lines, ${mode}`, async () => {
      const project = makeProject()
      mkdirSync(join(project, 'src'), { recursive: true })
      writeFileSync(join(project, 'src', 'util.ts'), UTIL)
      writeFileSync(join(project, 'util.ts'), UTIL)
      const workspace = mode === 'workspace' ? await createWorkspace([project]) : undefined
      const all = samples(project)
      assert.equal(all.length, 19)
      for (const { agent, call, result } of all) {
        const classified = classifyCall(defaultProfile, call.name, call.arguments, none)
        const facts = await resultFacts(classified, result, defaultProfile, workspace, views)
        const about = `${agent} ${call.name} ${call.arguments}: ${result.slice(0, 80)}`
        assert.equal(facts.call.kind, 'other', about)
        assert.equal(facts.unrecognised, undefined, about)
        assert.equal(facts.views, undefined, about)
      }
    })

  test('with a workspace, a read of a path where nothing is shows no lines, whatever was printed', async () => {
    const project = makeProject()
    const workspace = await createWorkspace([project])
    const cat = (args: object, text: string) =>
      resultFacts(
        classifyCall(defaultProfile, 'bash', JSON.stringify(args), none),
        text,
        defaultProfile,
        workspace,
        views,
      )
    // An error no profile knows, from a `workdir` inside the project that is not there.
    const gone = await cat(
      { command: 'cat util.ts', workdir: join(project, 'nosuchdir') },
      'oops\n',
    )
    assert.equal(gone.call.kind, 'other')
    // Blind, outside the project, the same text is taken for the file's one line.
    const outside = await cat({ command: 'cat /elsewhere/util.ts' }, 'oops\n')
    assert.equal(outside.call.kind, 'read')
  })
})
