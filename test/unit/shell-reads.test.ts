/**
 * Shell reads behind `cd DIR &&`, in pipelines, with head and tail (src/tools/shell.ts), and the
 * wrappers agents put around a command's output (src/tools/shell-output.ts, the profiles'
 * shellEnvelopes): what resultFacts makes of them. The real mini-swe-agent texts these forms come
 * from are in test/unit/real-traces.test.ts.
 */
import assert from 'node:assert/strict'
import { mkdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, test } from 'node:test'
import { loadLoop } from '../../src/config/loop.js'
import { DedupeTable, renderResult } from '../../src/context/index.js'
import { resultFacts, type FileViews } from '../../src/pipeline/facts.js'
import { classifyCall, defaultProfile, shellCall, splitTrailer } from '../../src/tools/index.js'
import { createWorkspace } from '../../src/workspace/index.js'
import type { ToolDefinition } from '../../src/wire/chat.js'
import { makeProject } from '../helpers/workspace.js'

const none = new Map<string, ToolDefinition>()
const rules = loadLoop().context
const views: FileViews = { content: async () => undefined }

describe('shellCall: the forms of a shell read', () => {
  test('a read behind `cd DIR &&` or `cd DIR;` keeps its path as given, and DIR', () => {
    const read = (path: string, dir: string | undefined, start: number, end?: number) => ({
      kind: 'read',
      path,
      ...(dir === undefined ? {} : { dir }),
      start,
      ...(end === undefined ? {} : { end }),
      shell: true,
    })
    const forms: [string, object][] = [
      [
        "cd /testbed && sed -n '12,20p' django/db/mixins.py",
        read('django/db/mixins.py', '/testbed', 12, 20),
      ],
      ['cd /testbed; cat a.py', read('a.py', '/testbed', 1)],
      ['cd src && cat ../README.md', read('../README.md', 'src', 1)],
      ['cd /testbed && cat /etc/hosts', read('/etc/hosts', undefined, 1)],
      ["bash -lc 'cd /w && head -n 3 a.py'", read('a.py', '/w', 1, 3)],
    ]
    for (const [command, want] of forms) assert.deepEqual(shellCall(command), want, command)
    assert.deepEqual(shellCall('cd /testbed && grep -n "def x" a.py'), {
      kind: 'grep',
      name: 'shell',
      args: { argv: ['grep', '-n', 'def x', 'a.py'], dir: '/testbed' },
    })
  })

  test('a printer piped into a picker of lines; head and tail; sed -n ranges', () => {
    const forms: [string, object][] = [
      ["nl -ba a.py | sed -n '10,40p'", { start: 10, end: 40, numbered: true }],
      ["cat -n a.py | sed -n '10,40p'", { start: 10, end: 40, numbered: true }],
      ['cat a.py | head -n 50', { start: 1, end: 50 }],
      ['cat a.py | head -50', { start: 1, end: 50 }],
      ['cat a.py | head', { start: 1, end: 10 }],
      ["cat a.py | sed -n '5,6p'", { start: 5, end: 6 }],
      ['nl -ba a.py | tail -n 20', { start: 1, tail: 20, numbered: true }],
      ['head -n 5 a.py', { start: 1, end: 5 }],
      ['head -n5 a.py', { start: 1, end: 5 }],
      ['head -5 a.py', { start: 1, end: 5 }],
      ['head a.py', { start: 1, end: 10 }],
      ['tail -n 5 a.py', { start: 1, tail: 5 }],
      ['tail -5 a.py', { start: 1, tail: 5 }],
      ['tail a.py', { start: 1, tail: 10 }],
      ['cat a.py | tail -100', { start: 1, tail: 100 }],
      ['tail -n +30 a.py', { start: 30 }],
      ["sed -n '7p' a.py", { start: 7, end: 7 }],
      ["sed -n '7,$p' a.py", { start: 7 }],
    ]
    for (const [command, range] of forms) {
      const { kind, numbered, ...rest } = { kind: 'read', numbered: undefined, ...range }
      assert.deepEqual(
        shellCall(command),
        { kind, path: 'a.py', ...rest, shell: true, ...(numbered ? { numbered } : {}) },
        command,
      )
    }
  })

  test('anything else a shell could make of it is other', () => {
    for (const command of [
      'cd x || cat a.py', // runs where cd failed
      'cd - && cat a.py',
      'cd a && cd b && cat c.py', // one cd only
      'cat a.py && cat b.py', // two outputs
      'cat a.py; ls',
      'cat a.py\nls',
      'cat a.py &',
      'cat a.py | grep x', // lines picked by content
      "sed -n '1,5p' a.py | nl -ba", // numbered from 1, not from 5
      "sed -n '100,200p' a.py | head -5",
      "nl a.py | sed -n '1,2p'", // nl without -ba skips empty lines
      'head -40 a.py | grep -n x',
      'cat a.py | head -n 5 b.py',
      'head -c 5 a.py',
      'head -n 0 a.py',
      'tail -f a.py',
      'tail -n 0 a.py',
      'cat a.py | cat -A',
      'cat a.py 2>&1',
      "sed -n '5,3p' a.py",
    ]) {
      assert.equal(shellCall(command).kind, 'other', command)
    }
  })
})

describe('resultFacts: shell output in its wrapper', () => {
  const facts = async (command: string, text: string) =>
    (
      await resultFacts(
        classifyCall(defaultProfile, 'bash', JSON.stringify({ command }), none),
        text,
        defaultProfile,
        undefined,
        views,
      )
    ).call
  const range = (call: Awaited<ReturnType<typeof facts>>) =>
    call.kind === 'read' ? [call.path, call.start, call.end] : call.kind
  const mini = (code: number, output: string) =>
    `<returncode>${code}</returncode>\n<output>\n${output}</output>`

  test("mini-swe-agent: the body inside <output> is the output; a failed run's is not a read", async () => {
    const numbered = '    10\tdef a():\n    11\t\n    12\t    return 1\n'
    assert.deepEqual(range(await facts("nl -ba a.py | sed -n '10,12p'", mini(0, numbered))), [
      'a.py',
      10,
      12,
    ])
    assert.deepEqual(range(await facts("sed -n '10,12p' a.py", mini(0, 'x\n\ny'))), [
      'a.py',
      10,
      12,
    ])
    const failed = [
      mini(1, 'cat: a.py: No such file or directory\n'),
      mini(2, 'x\ny\n'),
      // `cd DIR;` that failed: the read ran in another directory.
      mini(0, 'bash: line 1: cd: /nope: No such file or directory\nx\n'),
      // Timed out: the exception comes first.
      `<exception>An error occurred while executing the command: timed out</exception>\n${mini(-1, 'x\n')}`,
      mini(0, ''),
    ]
    for (const text of failed) assert.equal(range(await facts('cat a.py', text)), 'other', text)
  })

  test('mini-swe-agent: an output it cut is never a read', async () => {
    // config/benchmarks/swebench.yaml (2.2.7) for an output of 10,000 characters or more.
    const head = Array.from({ length: 400 }, (_, i) => `line ${i + 1}`).join('\n')
    const cut =
      '<returncode>0</returncode>\n<warning>\nThe output of your last command was too long.\n' +
      'Please try a different command that produces less output.\n</warning>' +
      `<output_head>\n${head.slice(0, 5000)}\n</output_head>\n<elided_chars>\n1234 characters elided\n` +
      `</elided_chars>\n<output_tail>\n${head.slice(-5000)}\n</output_tail>`
    assert.equal(range(await facts('cat a.py', cut)), 'other')
  })

  test('the JSON wrappers: mini-swe-agent `mini` and Codex', async () => {
    const json = (value: object) => JSON.stringify(value, null, 2)
    assert.deepEqual(range(await facts('cat a.py', json({ returncode: 0, output: 'x\ny\n' }))), [
      'a.py',
      1,
      2,
    ])
    for (const text of [
      json({ returncode: 1, output: 'x\n' }),
      json({ returncode: 0, output_head: 'x\n', output_tail: 'y\n', elided_chars: 9, warning: '' }),
    ])
      assert.equal(range(await facts('cat a.py', text)), 'other', text)
    const codex = (exit: number) =>
      JSON.stringify({ output: 'x\ny\n', metadata: { exit_code: exit, duration_seconds: 0.1 } })
    assert.deepEqual(range(await facts('cat a.py', codex(0))), ['a.py', 1, 2])
    assert.equal(range(await facts('cat a.py', codex(1))), 'other')
  })

  test("raw output is the lines as they are, even when they look numbered; cat -n's must be", async () => {
    const tsv = '1\tapple\n2\tpear\n'
    const call = await facts("sed -n '5,6p' data.tsv", mini(0, tsv))
    assert.deepEqual(range(call), ['data.tsv', 5, 6])
    if (call.kind === 'read') assert.deepEqual(call.shown, ['1\tapple', '2\tpear'])
    assert.equal(range(await facts('cat -n data.tsv', mini(0, 'apple\npear\n'))), 'other')
  })

  test('a tail is placed only when its lines or the file say where', async () => {
    const lines = (n: number) => Array.from({ length: n }, (_, i) => `l${i}`).join('\n') + '\n'
    // Fewer lines than asked: the whole file.
    assert.deepEqual(range(await facts('tail -n 10 a.py', mini(0, lines(3)))), ['a.py', 1, 3])
    // As many as asked: where they start is not known blind.
    assert.equal(range(await facts('tail -n 3 a.py', mini(0, lines(3)))), 'other')
    const numbered = '   98\tx\n   99\ty\n  100\tz\n'
    assert.deepEqual(range(await facts('nl -ba a.py | tail -n 3', mini(0, numbered))), [
      'a.py',
      98,
      100,
    ])
  })

  test("behind `cd DIR &&`, the bracket names the path as given and the file is DIR's", async () => {
    // Blind: the file is known by the path joined to DIR, so a read of it by either path is one.
    const blind = await facts("cd /testbed && sed -n '2,3p' src/a.py", mini(0, 'x\ny\n'))
    assert.equal(blind.kind, 'read')
    if (blind.kind === 'read')
      assert.deepEqual([blind.path, blind.absPath], ['src/a.py', '/testbed/src/a.py'])
    // Workspace mode: DIR is resolved within the workspace, as the call's own path would be.
    const project = makeProject()
    mkdirSync(join(project, 'sub'))
    const workspace = await createWorkspace([project])
    const call = JSON.stringify({ command: `cd ${project}/sub && head -n 2 ../util.ts` })
    const read = (
      await resultFacts(
        classifyCall(defaultProfile, 'bash', call, none),
        mini(0, 'export function util() {\n  return 1\n'),
        defaultProfile,
        workspace,
        views,
      )
    ).call
    assert.equal(read.kind, 'read')
    if (read.kind === 'read') {
      assert.deepEqual([read.path, read.absPath], ['../util.ts', `${project}/util.ts`])
      assert.deepEqual([read.start, read.end, read.file?.lines], [1, 2, 3])
    }
  })

  test("run in the tool's own directory (workdir, directory, cwd): the path resolves there", () => {
    const read = (name: string, args: object) =>
      classifyCall(defaultProfile, name, JSON.stringify(args), none)
    const inSrc = { kind: 'read', path: 'util.ts', start: 1, shell: true, dir: '/p/src' }
    // opencode and Kilo, Codex, Qwen Code, Roo Code, Crush: each agent's own argument.
    assert.deepEqual(read('bash', { command: 'cat util.ts', workdir: '/p/src' }), inSrc)
    assert.deepEqual(read('exec_command', { cmd: 'cat util.ts', workdir: '/p/src' }), inSrc)
    assert.deepEqual(
      read('run_shell_command', { command: 'cat util.ts', directory: '/p/src' }),
      inSrc,
    )
    assert.deepEqual(read('execute_command', { command: 'cat util.ts', cwd: '/p/src' }), inSrc)
    assert.deepEqual(read('bash', { command: 'cat util.ts', working_dir: '/p/src' }), inSrc)
    // A `cd` in the command goes on from it; an absolute path or `cd` needs none of it.
    assert.deepEqual(read('bash', { command: 'cd lib && cat a.ts', workdir: '/p' }), {
      ...inSrc,
      path: 'a.ts',
      dir: '/p/lib',
    })
    assert.deepEqual(read('bash', { command: 'cd /q && cat a.ts', workdir: '/p' }), {
      ...inSrc,
      path: 'a.ts',
      dir: '/q',
    })
    assert.deepEqual(read('bash', { command: 'cat /q/a.ts', workdir: '/p' }), {
      kind: 'read',
      path: '/q/a.ts',
      start: 1,
      shell: true,
    })
    // Claude Code's Bash has no such argument: one of that name is not read.
    assert.deepEqual(read('Bash', { command: 'cat util.ts', workdir: '/p/src' }), {
      kind: 'read',
      path: 'util.ts',
      start: 1,
      shell: true,
    })
  })

  test('Codex 0.171 cuts an output past 10,000 bytes: never a read, never a stub (the real CLI)', async () => {
    const captured = JSON.parse(
      readFileSync(new URL('../fixtures/agents/codex/cut-outputs.json', import.meta.url), 'utf8'),
    ) as { results: { call: { name: string; arguments: string }; result: string }[] }
    const table = new DedupeTable()
    for (const [i, { call, result }] of captured.results.entries()) {
      assert.match(result, /\nOutput:\nWarning: truncated output .*\nTotal output lines: \d+\n/)
      const facts = await resultFacts(
        classifyCall(defaultProfile, call.name, call.arguments, none),
        result,
        defaultProfile,
        undefined,
        views,
      )
      assert.deepEqual(facts, { call: { kind: 'other' } }, call.arguments)
      const rendering = renderResult(
        { number: i + 1, call: facts.call, text: result },
        table,
        rules,
      )
      assert.equal(rendering.text, `[#000${i + 1}]\n${result}`)
    }
    // A tool it does not offer: its answer is no file's lines.
    const unsupported = await resultFacts(
      classifyCall(defaultProfile, 'shell_command', JSON.stringify({ command: 'cat a.txt' }), none),
      'unsupported call: shell_command',
      defaultProfile,
      undefined,
      views,
    )
    assert.deepEqual(unsupported, { call: { kind: 'other' } })
    // Its structured form says so by `Total output lines:` first, the plain one before `Output:`.
    const cut = 'Total output lines: 3000\n\nline 1\n…9 chars truncated…ne 3000\n'
    for (const text of [
      JSON.stringify({ output: cut, metadata: { exit_code: 0 } }),
      `Exit code: 0\nWall time: 0.1 seconds\nTotal output lines: 3000\nOutput:\n${cut.slice(26)}`,
    ]) {
      const facts = await resultFacts(
        classifyCall(defaultProfile, 'shell', JSON.stringify({ command: ['cat', 'a.txt'] }), none),
        text,
        defaultProfile,
        undefined,
        views,
      )
      assert.equal(facts.call.kind, 'other', text)
    }
  })

  test("workspace mode: output that is not the file's lines is no read (a notice the agent added)", async () => {
    const project = makeProject()
    const workspace = await createWorkspace([project])
    const facts = (output: string) =>
      resultFacts(
        classifyCall(defaultProfile, 'bash', JSON.stringify({ command: 'cat util.ts' }), none),
        output,
        defaultProfile,
        workspace,
        views,
      )
    const content = readFileSync(join(project, 'util.ts'), 'utf8')
    assert.equal((await facts(content)).call.kind, 'read')
    const notice =
      '\n\n...120 bytes truncated...\n\nThe tool call succeeded but the output was truncated.'
    assert.deepEqual(await facts(content + notice), { call: { kind: 'other' } })
  })

  test("workspace mode: a tail is placed by the file's length, when the file still shows it", async () => {
    const workspace = await createWorkspace([makeProject()])
    const tail = (text: string) =>
      resultFacts(
        classifyCall(defaultProfile, 'bash', '{"command":"cat app.ts | tail -n 2"}', none),
        mini(0, text),
        defaultProfile,
        workspace,
        views,
      )
    const placed = (
      await tail('export const line339 = 339 // app\nexport const line340 = 340 // app\n')
    ).call
    assert.equal(placed.kind, 'read')
    if (placed.kind === 'read')
      assert.deepEqual([placed.start, placed.end, placed.file?.lines], [339, 340, 340])
    assert.equal(
      (await tail('changed since\nexport const line340 = 340 // app\n')).call.kind,
      'other',
    )
  })
})

const shellCuts = JSON.parse(
  readFileSync(new URL('../fixtures/agents/shell-cuts/cut-outputs.json', import.meta.url), 'utf8'),
) as {
  results: { agent: string; call: { name: string; arguments: string }; result: string }[]
}

describe("the agents' own cut of a long shell output (the real CLIs): never a read", () => {
  test('opencode and Kilo, Qwen Code, Claude Code: cut, lost or persisted, no file lines', async () => {
    for (const { agent, call, result } of shellCuts.results) {
      const classified = classifyCall(defaultProfile, call.name, call.arguments, none)
      assert.equal(classified.kind, 'read', agent)
      const { body } = splitTrailer(result, defaultProfile.trailers)
      const facts = await resultFacts(classified, body, defaultProfile, undefined, views)
      assert.equal(facts.call.kind, 'other', `${agent}: ${result.slice(0, 60)}`)
      assert.equal(facts.unrecognised, undefined, agent)
      assert.equal(facts.views, undefined, agent)
    }
  })

  test('the same wrappers, whole, are still reads', async () => {
    const read = async (name: string, command: string, text: string) =>
      (
        await resultFacts(
          classifyCall(defaultProfile, name, JSON.stringify({ command }), none),
          text,
          defaultProfile,
          undefined,
          views,
        )
      ).call
    const qwen = (output: string) =>
      `Command: cat a.ts\nDirectory: (root)\nOutput: ${output}\nError: (none)\nExit Code: 0\nSignal: (none)\nProcess Group PGID: (none)`
    const whole = await read('run_shell_command', 'cat a.ts', qwen('x\n(empty)'))
    assert.deepEqual(whole.kind === 'read' && [whole.start, whole.end], [1, 2])
    const plain = await read('bash', 'cat a.ts', 'x\ny\n')
    assert.deepEqual(plain.kind === 'read' && [plain.start, plain.end], [1, 2])
  })
})
