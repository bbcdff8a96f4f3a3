/**
 * Every recorded or source-built sample of eight agents (test/fixtures/agents/<agent>/samples.json)
 * through the classifier and resultFacts, in blind mode: what the engine is told about each call.
 * Each sample states what it is (`expect`); where the proxy answers otherwise on purpose, the
 * table DIFFERENT below says what it answers and why.
 */
import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { test } from 'node:test'
import type { FileChange, SemanticCall } from '../../src/context/index.js'
import { resultFacts, type FileViews } from '../../src/pipeline/facts.js'
import { classifyCall, commandArgv, defaultProfile, splitTrailer } from '../../src/tools/index.js'
import type { ToolDefinition } from '../../src/wire/chat.js'

const AGENTS = [
  'claude-code',
  'cline-classic',
  'cline-v4',
  'roo-code',
  'crush',
  'openhands',
  'continue',
  'goose',
] as const

interface Sample {
  readonly title: string
  readonly call: { readonly name: string; readonly arguments: string }
  readonly result?: string
  readonly content_shape?: 'string' | 'parts'
  readonly parts?: readonly (string | { readonly text: string })[] | null
  readonly expect: {
    readonly kind: string
    readonly path?: string | null
    readonly start?: number
    readonly end?: number
    readonly total?: number
    readonly created?: boolean
  }
}

/** The 12-line file every sample works on, as the request showed it before the call. */
const APP_TS =
  [
    'import { readFile } from "node:fs/promises";',
    '',
    'export interface Config {',
    '  name: string;',
    '  port: number;',
    '}',
    '',
    'export async function loadConfig(path: string): Promise<Config> {',
    '  const raw = await readFile(path, "utf8");',
    '  return JSON.parse(raw) as Config;',
    '}',
    'export const DEFAULT_PORT = 8080;',
  ].join('\n') + '\n'

const isAppTs = (path: string | null | undefined) =>
  path === 'src/app.ts' || path === '/work/project/src/app.ts'

/** Blind mode: only app.ts has a view (the samples' other files were never shown). */
const views: FileViews = { content: async (absPath) => (isAppTs(absPath) ? APP_TS : undefined) }

/** What the engine must be told. */
type Want =
  | {
      readonly kind: 'read'
      readonly path: string
      readonly start: number
      readonly end: number
      readonly total?: number
    }
  | { readonly kind: 'listing'; readonly group: string }
  /** `before` null: a new file ("Created"); else the view of app.ts. */
  | { readonly kind: 'edit' | 'patch'; readonly created: boolean }
  /** `touches`: the change succeeded but cannot be diffed; without it: a failure or a stub. */
  | { readonly kind: 'other'; readonly touches: boolean }
  /** A call that read several files: each file's read, or null where its answer is none. */
  | {
      readonly kind: 'reads'
      readonly files: readonly ({ path: string; start: number; end: number } | null)[]
    }

// Claude Code 2.1.88, Roo, OpenHands and Crush number the empty string after a file's final
// newline: `13` of a 12-line file. That line is no line of the file and is dropped.
const FINAL_NEWLINE = 'the last numbered line only stands for the final newline'

/** Samples the proxy answers otherwise than their `expect`, and why. */
const DIFFERENT: Record<string, { readonly want: Want; readonly why: string }> = {
  'claude-code: full read of a small file (2.1.88 default for 3P: compact `N\\t` prefix)': {
    want: { kind: 'read', path: '/work/project/src/app.ts', start: 1, end: 12 },
    why: FINAL_NEWLINE,
  },
  'claude-code: full read, padded arrow prefix (`{n:>6}→`, when tengu_compact_line_prefix_killswitch is on, and all builds before the compact format)':
    {
      want: { kind: 'read', path: '/work/project/src/app.ts', start: 1, end: 12 },
      why: FINAL_NEWLINE,
    },
  'claude-code: read of an empty file': {
    want: { kind: 'read', path: '/work/project/src/empty.ts', start: 1, end: 0, total: 0 },
    why: 'an empty file: no lines (end < start), length 0',
  },
  'claude-code: read with offset past EOF': {
    want: { kind: 'other', touches: false },
    why:
      'nothing is shown, and "The file has 13 lines" counts the empty string after the final ' +
      "newline (the file has 12 or 13 lines): an empty read would replace the file's row in the " +
      'table after a summary with a wrong length',
  },
  'claude-code: NotebookEdit replace': {
    want: { kind: 'other', touches: true },
    why: 'a notebook is JSON the cell edit does not show: the file is touched, not diffed',
  },
  'roo-code: full read of a small file': {
    want: { kind: 'read', path: 'src/app.ts', start: 1, end: 12 },
    why: FINAL_NEWLINE,
  },
  'roo-code: ranged read reaching EOF (no header)': {
    want: { kind: 'read', path: 'src/app.ts', start: 10, end: 12 },
    why: FINAL_NEWLINE,
  },
  'roo-code: read of an empty file': {
    want: { kind: 'read', path: 'src/empty.ts', start: 1, end: 0, total: 0 },
    why:
      'Roo splits "" into one empty line, `1 | `, the same empty string a final newline gives: ' +
      'the file has no lines (its `1 | ` alone, without a truncation header, is only an empty file)',
  },
  'crush: full read of a small file': {
    want: { kind: 'read', path: '/work/project/src/app.ts', start: 1, end: 12 },
    why: FINAL_NEWLINE,
  },
  'crush: [cassette] full read (3-line go.mod + final newline → 4 numbered lines)': {
    want: {
      kind: 'read',
      path: '/tmp/crush-test/TestCoderAgent/deepseek-v4/read_a_file/go.mod',
      start: 1,
      end: 3,
    },
    why: FINAL_NEWLINE,
  },
  'crush: [cassette] re-read after edit (no dedupe stub in Crush)': {
    want: {
      kind: 'read',
      path: '/tmp/crush-test/TestCoderAgent/deepseek-v4/multiedit_tool/main.go',
      start: 1,
      end: 8,
    },
    why: FINAL_NEWLINE,
  },
  'openhands: [V1 file_editor] full read of a small file': {
    want: { kind: 'read', path: '/work/project/src/app.ts', start: 1, end: 12 },
    why: FINAL_NEWLINE,
  },
  'openhands: [V0 str_replace_editor] full read of a small file': {
    want: { kind: 'read', path: '/work/project/src/app.ts', start: 1, end: 12 },
    why: FINAL_NEWLINE,
  },
  'openhands: [V1] observation truncated for length (file content clipped inside the editor)': {
    want: { kind: 'read', path: '/work/project/src/big.ts', start: 1, end: 1 },
    why: 'the lines before the clip notice; a cut read is never taken for the whole file',
  },
  'openhands: [V1 terminal] listing via shell': {
    want: { kind: 'listing', group: 'list' },
    why: 'a plain `ls` is a listing, as Cline 4\'s (its sample says "list"): same output again is "same result"',
  },
  'cline-v4: two files in one call (one array entry each, order of the request)': {
    want: {
      kind: 'reads',
      files: [{ path: '/work/project/src/app.ts', start: 1, end: 2 }, null],
    },
    why:
      'one message answers two files, one of them a failure: each file is read on its own ' +
      "(a stub of app.ts would stand in its own string, beside the other file's error)",
  },
  // The answer does not say whether the file is new: Cline's write_to_file and Crush's write
  // answer alike for a new file and an overwrite. Without a view of the file, "Created" could be
  // false and a diff has no base: the write only touches it.
  'cline-classic: write of a new file': {
    want: { kind: 'other', touches: true },
    why: 'the answer does not say the file is new, and the request never showed it',
  },
  'crush: write of a new file': {
    want: { kind: 'other', touches: true },
    why: 'the answer does not say the file is new, and the request never showed it',
  },
  'crush: [cassette] write of a new file': {
    want: { kind: 'other', touches: true },
    why: 'the answer does not say the file is new, and the request never showed it',
  },
  'continue: edit_existing_file success': {
    want: { kind: 'other', touches: true },
    why: 'a lazy "... existing code ..." edit merged by an apply model: not derivable from its arguments',
  },
  'goose: [2026] read via shell (no read tool in 2026)': {
    want: { kind: 'read', path: 'src/app.ts', start: 1, end: 12 },
    why: '`cat` of the whole file (its trailing newlines trimmed by Goose)',
  },
}

/** A change that succeeded: diffed when its file has a view or is said to be new. */
function changeWant(sample: Sample): Want {
  const { kind, path, created } = sample.expect
  if (created === true) return { kind: kind === 'patch' ? 'patch' : 'edit', created: true }
  // The answer does not say the file is new (Cline's, Crush's and Goose's writes answer alike
  // for both), or it is a file this request never showed: its content before is not known, so
  // the call only touches it. The success is still recognised (`touches` is set only then).
  if (!isAppTs(path)) return { kind: 'other', touches: true }
  return { kind: kind === 'patch' ? 'patch' : 'edit', created: false }
}

/** A shell command is read by the program it runs (src/tools/shell.ts). */
function shellWant(sample: Sample): Want {
  const { path, start, end } = sample.expect
  if (typeof path === 'string' && start !== undefined && end !== undefined)
    return { kind: 'read', path, start, end }
  const args = JSON.parse(sample.call.arguments) as { command?: string; commands?: string[] }
  const program = commandArgv(args.command ?? args.commands?.[0])?.[0]
  if (program === 'rg' || program === 'grep') return { kind: 'listing', group: 'grep' }
  if (program === 'ls') return { kind: 'listing', group: 'list' }
  return { kind: 'other', touches: false }
}

function expected(sample: Sample): Want {
  const e = sample.expect
  switch (e.kind) {
    case 'read':
      assert.ok(e.path && e.start !== undefined && e.end !== undefined, 'a read states its range')
      return {
        kind: 'read',
        path: e.path,
        start: e.start,
        end: e.end,
        ...(e.total === undefined ? {} : { total: e.total }),
      }
    case 'failure':
    case 'other':
      return { kind: 'other', touches: false }
    case 'list':
    case 'glob':
    case 'grep':
    case 'search':
      return { kind: 'listing', group: e.kind }
    case 'edit':
    case 'write':
    case 'patch':
      return changeWant(sample)
    case 'shell':
      return shellWant(sample)
    default:
      throw new Error(`unknown expect.kind ${e.kind}`)
  }
}

function resultText(sample: Sample): string {
  if (sample.content_shape === 'parts' && sample.parts)
    return sample.parts.map((part) => (typeof part === 'string' ? part : part.text)).join('\n')
  return sample.result ?? ''
}

function assertChange(change: FileChange, created: boolean, label: string): void {
  if (created) {
    assert.equal(change.before, null, `${label}: a new file`)
  } else {
    assert.equal(change.before, APP_TS, `${label}: the view of app.ts is the content before`)
  }
  assert.equal(typeof change.after, 'string', `${label}: the content after`)
  assert.notEqual(change.after, change.before, `${label}: a change`)
}

function assertCall(call: SemanticCall, want: Want): void {
  switch (want.kind) {
    case 'read': {
      assert.equal(call.kind, 'read', 'a read')
      if (call.kind !== 'read') return
      assert.deepEqual(
        { path: call.path, start: call.start, end: call.end },
        { path: want.path, start: want.start, end: want.end },
      )
      assert.equal(call.total, want.total, 'the length, when the result states it')
      return
    }
    case 'listing':
      assert.equal(call.kind, 'listing', 'a listing')
      if (call.kind === 'listing') assert.equal(call.group, want.group)
      return
    case 'edit':
      assert.equal(call.kind, 'edit', 'an edit')
      if (call.kind === 'edit') assertChange(call, want.created, 'edit')
      return
    case 'patch':
      assert.equal(call.kind, 'patch', 'a patch')
      if (call.kind === 'patch') {
        assert.equal(call.files.length, 1)
        assertChange(call.files[0]!, want.created, 'patch')
      }
      return
    case 'reads':
      assert.equal(call.kind, 'reads', 'several reads')
      if (call.kind === 'reads')
        assert.deepEqual(
          call.files.map((file) =>
            file.read ? { path: file.read.path, start: file.read.start, end: file.read.end } : null,
          ),
          want.files,
        )
      return
    case 'other':
      assert.equal(call.kind, 'other', 'neither a read nor a change')
      if (call.kind === 'other') {
        assert.equal(
          (call.touches?.length ?? 0) > 0,
          want.touches,
          want.touches ? 'a change that cannot be diffed touches its file' : 'no stub target',
        )
      }
      return
  }
}

// The changes derived from the arguments, where the samples fix what the file becomes.
const AFTER: Record<string, string> = {
  'openhands: [V1 file_editor] insert after line 2': APP_TS.replace(
    'promises";\n\n',
    'promises";\n\n// inserted\n',
  ),
  'openhands: [V0 str_replace_editor] insert after line 2': APP_TS.replace(
    'promises";\n\n',
    'promises";\n\n// inserted\n',
  ),
  'goose: [classic] insert after line 2 (snippet numbering starts at 0 when the insert is near the top — off-by-one in source)':
    APP_TS.replace('promises";\n\n', 'promises";\n\n// inserted\n'),
  // Cline 4 splits new_text on "\n": its final newline gives an empty line.
  'cline-v4: insert (insert_line = 1-based line BEFORE which the text goes)':
    '// header\n\n' + APP_TS,
  'cline-classic: edit success (replace_in_file echoes the whole file)': APP_TS.replace(
    '8080',
    '3000',
  ),
}

for (const agent of AGENTS) {
  const fixture = JSON.parse(
    readFileSync(new URL(`../fixtures/agents/${agent}/samples.json`, import.meta.url), 'utf8'),
  ) as { tools: ToolDefinition[]; samples: Sample[] }
  const definitions = new Map(fixture.tools.map((tool) => [tool.function?.name ?? '', tool]))
  for (const sample of fixture.samples) {
    const name = `${agent}: ${sample.title}`
    test(name, async (t) => {
      const different = DIFFERENT[name]
      if (different) t.diagnostic(`answered otherwise than its expect: ${different.why}`)
      const want = different?.want ?? expected(sample)
      const classified = classifyCall(
        defaultProfile,
        sample.call.name,
        sample.call.arguments,
        definitions,
      )
      // As the pipeline does: what the agent appends after any output is split off first.
      const facts = await resultFacts(
        classified,
        splitTrailer(resultText(sample), defaultProfile.trailers).body,
        defaultProfile,
        undefined,
        views,
      )
      // Every captured answer, failures included, is one the profile expects: no drift reported.
      assert.equal(facts.unrecognised, undefined, 'reported as unrecognised')
      assertCall(facts.call, want)
      const after = AFTER[name]
      if (after !== undefined && facts.call.kind === 'edit') assert.equal(facts.call.after, after)
    })
  }
}

test('every sample the tables name exists', () => {
  const names = new Set<string>()
  for (const agent of AGENTS) {
    const fixture = JSON.parse(
      readFileSync(new URL(`../fixtures/agents/${agent}/samples.json`, import.meta.url), 'utf8'),
    ) as { samples: Sample[] }
    for (const sample of fixture.samples) names.add(`${agent}: ${sample.title}`)
  }
  assert.deepEqual(
    [...Object.keys(DIFFERENT), ...Object.keys(AFTER)].filter((name) => !names.has(name)),
    [],
  )
})
