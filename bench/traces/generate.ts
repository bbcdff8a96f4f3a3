/**
 * A long, realistic coding-agent session over a real source tree (this repository's src/ and its
 * top-level files, contents as they are on disk), as opencode 1.18.33 sends it: one chat request
 * body per line, each the previous one plus the model's tool call(s) and their results, in the
 * format of test/fixtures/agents/opencode/session.jsonl (the same system prompt and tools).
 *
 * The steps are what an agent does over a few hundred turns: reads of new files, re-reads,
 * ranged reads around grep hits, edits with real old/new strings (applied to an in-memory copy,
 * so later reads, greps and `git diff` show them), failed edits, new files, greps and globs (some
 * repeated), directory listings, and shell commands (`npm test` prints about 1,500 lines, `tsc`,
 * `git diff`, `git status`, `wc -l`). Every few dozen steps the agent answers and the user asks
 * for the next thing. Seeded: the same seed and tree give the same bytes.
 *
 *   node --import tsx bench/traces/generate.ts --steps 300 --seed 1 --out /tmp/trace.jsonl
 *   node --import tsx src/cli.ts replay /tmp/trace.jsonl
 *   node --import tsx bench/traces/generate.ts --steps 300 --replay [replay flags]
 */
import { createHash } from 'node:crypto'
import { createWriteStream, readdirSync, readFileSync, statSync } from 'node:fs'
import { once } from 'node:events'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { createTwoFilesPatch } from 'diff'
import { packageRoot } from '../../src/config/loop.js'

export interface TraceOptions {
  /** Assistant messages with tool calls (user turns come on top). Default 300. */
  readonly steps?: number
  readonly seed?: number
  /** The real tree whose files are read: its src/ and a few top-level files. Default: this repo. */
  readonly tree?: string
  /** Where the agent believes the project is (paths in calls and results). */
  readonly root?: string
}

const TOP_LEVEL = ['README.md', 'package.json', 'loop.json', 'tsconfig.json']

const TASKS = [
  'Add a --record DIR flag that writes every chat request the proxy receives and sends, then a replay command that measures the savings.',
  'The redis store test is flaky on reconnect. Find out why and fix it.',
  'Refactor the way tool profiles are merged so that a profile can override another one.',
  'Make the read brackets show the total line count in blind mode when the agent states it.',
  'Add a unit test for the compaction table with more than 50 files.',
  'Why does the proxy log recall-left-to-client for Cline? Check and fix.',
  'Tighten the header allowlist: x-forwarded-* must never reach the upstream.',
  'Review the sqlite store for transactions that are not IMMEDIATE.',
  'Document the error codes in the README table and check they match src/errors.ts.',
  'Speed up history rebuilding for very long sessions; profile first.',
]

const ANSWERS = [
  'Done. I made the change, ran the type check and the tests, and they pass.',
  'I found the cause and fixed it; `npm test` is green again.',
  'The change is in place. I also added a test that covers the case.',
  'I looked through the code paths involved and updated the two places that needed it.',
]

/** mulberry32: small, fast, and the same everywhere. */
function rng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

interface Call {
  readonly name: string
  readonly args: Record<string, unknown>
  readonly result: string
}

interface Grep {
  readonly pattern: string
  readonly include?: string
}

type Action = () => Call[]

/** The session's state: the tree as the agent has changed it, what it has seen, the messages. */
class Session {
  readonly #random: () => number
  readonly #root: string
  readonly #files = new Map<string, string>()
  readonly #original = new Map<string, string>()
  readonly #mtime = new Map<string, number>()
  #clock = 0
  /** Files read (in full or in part), most recent last. */
  readonly #seen: string[] = []
  readonly #greps: Grep[] = []
  readonly #globs: string[] = []
  /** What the agent will do next, whatever the dice say (a read after a grep hit, …). */
  readonly #followUps: Action[] = []
  #callNumber = 0
  #task = 0
  readonly #head: string
  readonly #tail: string
  #messages = ''

  constructor(options: Required<TraceOptions>) {
    this.#random = rng(options.seed)
    this.#root = options.root.replace(/\/$/, '')
    for (const rel of listTree(options.tree)) {
      const text = readFileSync(join(options.tree, rel), 'utf8')
      this.#files.set(rel, text)
      this.#original.set(rel, text)
      this.#mtime.set(rel, this.#clock++)
    }
    const fixture = packageRoot() + 'test/fixtures/agents/opencode/'
    const tools = readFileSync(fixture + 'tools.json', 'utf8')
    const first = JSON.parse(readFileSync(fixture + 'session.jsonl', 'utf8').split('\n')[1]!) as {
      messages: { content: string }[]
    }
    const system = first.messages[0]!.content.split('/tmp/agents/project-oc').join(this.#root)
    this.#head = '{"model":"bench-model","max_tokens":8192,"messages":['
    this.#tail = `],"tools":${JSON.stringify(JSON.parse(tools))},"tool_choice":"auto","stream":true,"stream_options":{"include_usage":true}}`
    this.#push({ role: 'system', content: system })
  }

  *run(steps: number): Generator<string> {
    this.#push({ role: 'user', content: TASKS[this.#task++ % TASKS.length]! })
    yield this.#request()
    let nextTurn = this.#int(25, 45)
    for (let step = 1; step <= steps; step++) {
      if (step === nextTurn) {
        this.#push({ role: 'assistant', content: this.#pick(ANSWERS) })
        this.#push({ role: 'user', content: TASKS[this.#task++ % TASKS.length]! })
        yield this.#request()
        nextTurn += this.#int(25, 45)
      }
      const calls = (this.#followUps.shift() ?? this.#choose())()
      const ids = calls.map(() => this.#callId())
      this.#push({
        role: 'assistant',
        content: '',
        tool_calls: calls.map((call, i) => ({
          id: ids[i],
          type: 'function',
          function: { name: call.name, arguments: JSON.stringify(call.args) },
        })),
      })
      calls.forEach((call, i) =>
        this.#push({ role: 'tool', tool_call_id: ids[i], content: call.result }),
      )
      yield this.#request()
    }
  }

  #push(message: object): void {
    this.#messages += (this.#messages === '' ? '' : ',') + JSON.stringify(message)
  }

  #request(): string {
    return this.#head + this.#messages + this.#tail
  }

  // ── choosing ──────────────────────────────────────────────────────────────────────────────

  #choose(): Action {
    const weighted: [number, Action][] = [
      [14, () => [this.#readNew()]],
      [10, () => [this.#readAgain()]],
      [14, () => [this.#readRange()]],
      [5, () => this.#readParallel()],
      [14, () => [this.#edit()]],
      [1, () => [this.#failedEdit()]],
      [2, () => [this.#write()]],
      [12, () => [this.#grep()]],
      [5, () => [this.#glob()]],
      [3, () => [this.#listDir()]],
      [2, () => [this.#npmTest()]],
      [4, () => [this.#tsc()]],
      [3, () => [this.#gitDiff()]],
      [2, () => [this.#gitStatus()]],
      [1, () => [this.#wc()]],
      [1, () => [this.#readMissing()]],
    ]
    let roll = this.#random() * weighted.reduce((sum, [w]) => sum + w, 0)
    for (const [weight, action] of weighted) {
      roll -= weight
      if (roll < 0) return action
    }
    return weighted[0]![1]
  }

  #int(min: number, max: number): number {
    return min + Math.floor(this.#random() * (max - min + 1))
  }

  #pick<T>(items: readonly T[]): T {
    return items[Math.floor(this.#random() * items.length)]!
  }

  #callId(): string {
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
    let id = 'call_'
    for (let i = 0; i < 24; i++) id += alphabet[Math.floor(this.#random() * alphabet.length)]
    this.#callNumber++
    return id
  }

  #abs(rel: string): string {
    return `${this.#root}/${rel}`
  }

  #sources(): string[] {
    return [...this.#files.keys()].filter((rel) => rel.startsWith('src/'))
  }

  /** A file the agent has read, the recent ones more likely. */
  #recent(): string | undefined {
    if (this.#seen.length === 0) return undefined
    const window = this.#seen.slice(-8)
    return this.#random() < 0.75 ? this.#pick(window) : this.#pick(this.#seen)
  }

  #saw(rel: string): void {
    const at = this.#seen.indexOf(rel)
    if (at >= 0) this.#seen.splice(at, 1)
    this.#seen.push(rel)
  }

  #touch(rel: string, text: string): void {
    this.#files.set(rel, text)
    this.#mtime.set(rel, this.#clock++)
  }

  // ── reads ─────────────────────────────────────────────────────────────────────────────────

  #readNew(): Call {
    const unseen = this.#sources().filter((rel) => !this.#seen.includes(rel))
    const rel =
      unseen.length > 0 && this.#random() < 0.9
        ? this.#pick(unseen)
        : this.#pick([...this.#files.keys()])
    return this.#read(rel)
  }

  #readAgain(): Call {
    const rel = this.#recent()
    return rel === undefined ? this.#readNew() : this.#read(rel)
  }

  #readRange(): Call {
    const rel = this.#recent()
    if (rel === undefined) return this.#readNew()
    const total = fileLines(this.#files.get(rel)!).length
    const limit = this.#pick([20, 30, 40, 50, 80, 100])
    const offset = this.#int(1, Math.max(1, total - 10))
    return this.#read(rel, offset, limit)
  }

  #readParallel(): Call[] {
    const count = this.#int(2, 3)
    const calls: Call[] = []
    for (let i = 0; i < count; i++)
      calls.push(this.#random() < 0.6 ? this.#readNew() : this.#readAgain())
    return calls
  }

  #readMissing(): Call {
    const rel = `src/${this.#pick(['util', 'helpers', 'types', 'constants'])}.ts`
    const path = this.#abs(rel)
    return { name: 'read', args: { filePath: path }, result: `File not found: ${path}` }
  }

  /** opencode's read: `N: line`, the footer with the file's length or the range shown. */
  #read(rel: string, offset?: number, limit?: number): Call {
    const path = this.#abs(rel)
    const lines = fileLines(this.#files.get(rel)!)
    const start = Math.max(1, offset ?? 1)
    const end = Math.min(lines.length, start - 1 + (limit ?? 2000))
    const shown = lines.slice(start - 1, end).map((line, i) => `${start + i}: ${line}`)
    const footer =
      end >= lines.length
        ? `(End of file - total ${lines.length} lines)`
        : `(Showing lines ${start}-${end} of ${lines.length}. Use offset=${end + 1} to continue.)`
    this.#saw(rel)
    const args: Record<string, unknown> = { filePath: path }
    if (offset !== undefined) args.offset = offset
    if (limit !== undefined) args.limit = limit
    return {
      name: 'read',
      args,
      result: `<path>${path}</path>\n<type>file</type>\n<content>\n${shown.join('\n')}\n\n${footer}\n</content>`,
    }
  }

  #listDir(): Call {
    const dirs = [...new Set(this.#sources().map((rel) => rel.slice(0, rel.lastIndexOf('/'))))]
    const dir = this.#pick(dirs)
    const entries = new Set<string>()
    for (const rel of this.#files.keys()) {
      if (!rel.startsWith(dir + '/')) continue
      const rest = rel.slice(dir.length + 1)
      entries.add(rest.includes('/') ? rest.slice(0, rest.indexOf('/')) + '/' : rest)
    }
    const sorted = [...entries].sort()
    const path = this.#abs(dir)
    return {
      name: 'read',
      args: { filePath: path },
      result: `<path>${path}</path>\n<type>directory</type>\n<entries>\n${sorted.join('\n')}\n\n(${sorted.length} entries)\n</entries>`,
    }
  }

  // ── edits ─────────────────────────────────────────────────────────────────────────────────

  #edit(): Call {
    const rel = this.#recent()
    if (rel === undefined || !rel.endsWith('.ts')) return this.#readNew()
    const text = this.#files.get(rel)!
    const lines = text.split('\n')
    const candidates = lines
      .map((line, i) => [line, i] as const)
      .filter(([line]) => line.trim().length >= 12 && !line.trim().startsWith('//'))
    if (candidates.length === 0) return this.#readNew()
    const [, index] = this.#pick(candidates)
    // The old string: the line, and more lines after it until it occurs once.
    let count = 1
    let oldString = lines[index]!
    while (occurrences(text, oldString) > 1 && index + count < lines.length) {
      oldString = lines.slice(index, index + ++count).join('\n')
    }
    if (occurrences(text, oldString) !== 1) return this.#readNew()
    const indent = /^\s*/.exec(lines[index]!)![0]
    const note = this.#pick([
      'keep this in step with loop.json',
      'checked against the fixtures',
      'see the README for why',
      'TODO: measure before changing',
    ])
    const newString = this.#pick([
      () => `${indent}// ${note}\n${oldString}`,
      () => `${oldString}\n${indent}// ${note}`,
      () => oldString.replace(/\b(const|let)\b/, (word) => (word === 'const' ? 'let' : 'const')),
      () => oldString.replace(/(\d+)/, (n) => String(Number(n) + 1)),
      () =>
        oldString
          .split('\n')
          .map((line) => line.replace(/\s*$/, '') + ' // reviewed')
          .join('\n'),
    ])()
    if (newString === oldString) return this.#readNew()
    const at = text.indexOf(oldString)
    this.#touch(rel, text.slice(0, at) + newString + text.slice(at + oldString.length))
    const roll = this.#random()
    if (roll < 0.35) this.#followUps.push(() => [this.#read(rel)])
    else if (roll < 0.55) this.#followUps.push(() => [this.#tsc()])
    else if (roll < 0.6) this.#followUps.push(() => [this.#npmTest()])
    return {
      name: 'edit',
      args: { filePath: this.#abs(rel), oldString, newString },
      result: 'Edit applied successfully.',
    }
  }

  #failedEdit(): Call {
    const rel = this.#recent() ?? this.#pick(this.#sources())
    const line = this.#pick(fileLines(this.#files.get(rel)!).filter((l) => l.trim().length > 8))
    return {
      name: 'edit',
      args: { filePath: this.#abs(rel), oldString: line.trim() + '  ', newString: line.trim() },
      result:
        'Could not find oldString in the file. It must match exactly, including whitespace, indentation, and line endings.',
    }
  }

  #write(): Call {
    const base = this.#pick(this.#sources())
    const dir = base.slice(0, base.lastIndexOf('/'))
    const rel = `${dir}/bench-${this.#callNumber}.ts`
    const borrowed = fileLines(this.#files.get(base)!).slice(0, this.#int(15, 40))
    const content =
      [
        `/** Helpers split out of ${base.slice(dir.length + 1)}. */`,
        ...borrowed.filter((line) => line.startsWith('import ')),
        '',
        `export function helper${this.#callNumber}(input: string): string {`,
        '  return input.trim()',
        '}',
      ].join('\n') + '\n'
    this.#touch(rel, content)
    return {
      name: 'write',
      args: { filePath: this.#abs(rel), content },
      result: 'Wrote file successfully.',
    }
  }

  // ── searches ──────────────────────────────────────────────────────────────────────────────

  #grep(): Call {
    let grep: Grep
    if (this.#greps.length > 0 && this.#random() < 0.25) grep = this.#pick(this.#greps)
    else {
      const names = identifiers(this.#files.get(this.#pick(this.#sources()))!)
      const name = names.length > 0 ? this.#pick(names) : 'export function'
      const pattern = this.#pick([name, `function ${name}`, `${name}\\(`, `import .*${name}`])
      grep = this.#random() < 0.4 ? { pattern, include: '*.ts' } : { pattern }
      this.#greps.push(grep)
    }
    const matcher = new RegExp(grep.pattern)
    const files = [...this.#files.keys()]
      .filter((rel) => grep.include === undefined || globRegex(grep.include).test(basename(rel)))
      .sort((a, b) => this.#mtime.get(b)! - this.#mtime.get(a)!)
    const matches: [string, number, string][] = []
    for (const rel of files) {
      fileLines(this.#files.get(rel)!).forEach((line, i) => {
        if (matcher.test(line)) matches.push([rel, i + 1, line])
      })
    }
    const args: Record<string, unknown> = { pattern: grep.pattern, path: this.#root }
    if (grep.include !== undefined) args.include = grep.include
    if (matches.length === 0) return { name: 'grep', args, result: 'No files found' }
    const shown = matches.slice(0, 100)
    const out = [
      `Found ${matches.length} matches${matches.length > 100 ? ' (showing first 100)' : ''}`,
    ]
    let current = ''
    for (const [rel, line, text] of shown) {
      if (rel !== current) {
        if (current !== '') out.push('')
        current = rel
        out.push(`${this.#abs(rel)}:`)
      }
      // ripgrep's line keeps its newline and opencode adds one: a blank line after each match.
      out.push(`  Line ${line}: ${text}\n`)
    }
    if (matches.length > 100)
      out.push('', '(Results are truncated. Consider using a more specific path or pattern.)')
    const [firstRel, firstLine] = shown[0]!
    if (this.#random() < 0.5)
      this.#followUps.push(() => [this.#read(firstRel, Math.max(1, firstLine - 10), 40)])
    return { name: 'grep', args, result: out.join('\n') }
  }

  #glob(): Call {
    const pattern =
      this.#globs.length > 0 && this.#random() < 0.4
        ? this.#pick(this.#globs)
        : this.#pick([
            'src/**/*.ts',
            'src/store/*.ts',
            'src/pipeline/*.ts',
            'src/tools/profiles/*.ts',
            '**/*.json',
            'src/context/*.ts',
            '*.md',
          ])
    if (!this.#globs.includes(pattern)) this.#globs.push(pattern)
    const regex = globRegex(pattern)
    const found = [...this.#files.keys()]
      .filter((rel) => regex.test(rel))
      .sort((a, b) => this.#mtime.get(b)! - this.#mtime.get(a)!)
    return {
      name: 'glob',
      args: { pattern, path: this.#root },
      result: found.length === 0 ? 'No files found' : found.map((rel) => this.#abs(rel)).join('\n'),
    }
  }

  // ── shell ─────────────────────────────────────────────────────────────────────────────────

  #bash(command: string, result: string): Call {
    return { name: 'bash', args: { command, workdir: this.#root }, result }
  }

  /** node's spec reporter over a suite per source file: about 1,500 lines, timings vary. */
  #npmTest(): Call {
    const out = [
      '',
      '> lembas-proxy@0.1.0 test',
      "> node --import tsx --test --test-concurrency=1 $(find test -name '*.test.ts' | sort)",
      '',
    ]
    const sources = this.#sources().filter((rel) => rel.endsWith('.ts'))
    const names = sources.map((rel) => identifiers(this.#files.get(rel)!))
    const perName = Math.max(
      1,
      Math.round(1450 / Math.max(1, names.flat().length + sources.length)),
    )
    const failing = this.#random() < 0.4 ? this.#pick(sources) : undefined
    let tests = 0
    let failed = 0
    let total = 0
    sources.forEach((rel, i) => {
      const suite = rel.replace(/^src\//, '').replace(/\.ts$/, '')
      out.push(`▶ ${suite}`)
      let suiteMs = 0
      for (const name of names[i]!.length > 0 ? names[i]! : ['module']) {
        for (let k = 1; k <= perName; k++) {
          const ms = Math.round(this.#random() * 4000) / 1000 + 0.1
          suiteMs += ms
          tests++
          if (rel === failing && failed === 0) {
            failed++
            out.push(`  ✖ ${name} handles case ${k} (${ms.toFixed(3)}ms)`)
            out.push(`    AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:`)
            out.push(`    + actual - expected`, '', `    + 1`, `    - 2`, '')
            out.push(
              `        at TestContext.<anonymous> (file://${this.#abs(rel)}:${this.#int(10, 90)}:12)`,
            )
            continue
          }
          out.push(`  ✔ ${name} handles case ${k} (${ms.toFixed(3)}ms)`)
        }
      }
      total += suiteMs
      out.push(`▶ ${suite} (${suiteMs.toFixed(3)}ms)`, '')
    })
    out.push(
      `ℹ tests ${tests}`,
      `ℹ suites ${sources.length}`,
      `ℹ pass ${tests - failed}`,
      `ℹ fail ${failed}`,
      'ℹ cancelled 0',
      'ℹ skipped 0',
      'ℹ todo 0',
      `ℹ duration_ms ${(total + 900).toFixed(4)}`,
    )
    if (failing !== undefined)
      this.#followUps.push(() => [this.#read(failing, this.#int(1, 40), 60)])
    return this.#bash('npm test', out.join('\n') + '\n')
  }

  #tsc(): Call {
    const edited = [...this.#files.keys()].filter(
      (rel) => this.#files.get(rel) !== this.#original.get(rel),
    )
    if (edited.length === 0 || this.#random() < 0.6) return this.#bash('npx tsc --noEmit', '')
    const errors = Array.from({ length: this.#int(1, 4) }, () => {
      const rel = this.#pick(edited)
      const line = this.#int(1, fileLines(this.#files.get(rel)!).length)
      return this.#pick([
        `${rel}(${line},${this.#int(3, 30)}): error TS2304: Cannot find name 'value'.`,
        `${rel}(${line},${this.#int(3, 30)}): error TS2322: Type 'string' is not assignable to type 'number'.`,
        `${rel}(${line},${this.#int(3, 30)}): error TS2345: Argument of type 'undefined' is not assignable to parameter of type 'string'.`,
      ])
    })
    const files = new Set(errors.map((error) => error.slice(0, error.indexOf('('))))
    return this.#bash(
      'npx tsc --noEmit',
      errors.join('\n') +
        `\n\nFound ${errors.length} error${errors.length > 1 ? 's' : ''} in ${files.size} file${files.size > 1 ? 's' : ''}.\n`,
    )
  }

  #changed(): { modified: string[]; added: string[] } {
    const modified: string[] = []
    const added: string[] = []
    for (const [rel, text] of this.#files) {
      const before = this.#original.get(rel)
      if (before === undefined) added.push(rel)
      else if (before !== text) modified.push(rel)
    }
    return { modified: modified.sort(), added: added.sort() }
  }

  #gitDiff(): Call {
    const { modified } = this.#changed()
    const parts = modified.map((rel) => {
      const before = this.#original.get(rel)!
      const after = this.#files.get(rel)!
      const patch = createTwoFilesPatch(`a/${rel}`, `b/${rel}`, before, after, '', '', {
        context: 3,
      })
      const body = patch.slice(patch.indexOf('--- '))
      return `diff --git a/${rel} b/${rel}\nindex ${shortHash(before)}..${shortHash(after)} 100644\n${body.replace(/\t$/gm, '')}`
    })
    return this.#bash('git diff', parts.join(''))
  }

  #gitStatus(): Call {
    const { modified, added } = this.#changed()
    const out = ['On branch main']
    if (modified.length === 0 && added.length === 0)
      out.push('nothing to commit, working tree clean')
    if (modified.length > 0)
      out.push(
        'Changes not staged for commit:',
        '  (use "git add <file>..." to update what will be committed)',
        '  (use "git restore <file>..." to discard changes in working directory)',
        ...modified.map((rel) => `\tmodified:   ${rel}`),
        '',
      )
    if (added.length > 0)
      out.push(
        'Untracked files:',
        '  (use "git add <file>..." to include in what will be committed)',
        ...added.map((rel) => `\t${rel}`),
        '',
      )
    if (modified.length > 0 || added.length > 0)
      out.push('no changes added to commit (use "git add" and/or "git commit -a")')
    return this.#bash('git status', out.join('\n') + '\n')
  }

  #wc(): Call {
    const rows = this.#sources().map(
      (rel) => [fileLines(this.#files.get(rel)!).length, rel] as const,
    )
    const total = rows.reduce((sum, [n]) => sum + n, 0)
    const width = String(total).length + 1
    const out = [...rows, [total, 'total'] as const].map(
      ([n, rel]) => `${String(n).padStart(width)} ${rel}`,
    )
    return this.#bash("find src -name '*.ts' | xargs wc -l", out.join('\n') + '\n')
  }
}

/** The file's lines as opencode numbers them: a final newline does not start another line. */
function fileLines(text: string): string[] {
  const lines = text.split('\n')
  if (lines.length > 1 && lines.at(-1) === '') lines.pop()
  return lines
}

function occurrences(text: string, needle: string): number {
  let count = 0
  for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + 1)) count++
  return count
}

/** Exported names, what an agent greps for. */
function identifiers(text: string): string[] {
  const names = new Set<string>()
  for (const match of text.matchAll(
    /export (?:async )?(?:function|const|class|interface|type) ([A-Za-z_]\w*)/g,
  ))
    names.add(match[1]!)
  return [...names]
}

function basename(rel: string): string {
  return rel.slice(rel.lastIndexOf('/') + 1)
}

/** A glob as ripgrep reads it: `**` crosses folders, `*` and `?` do not. */
function globRegex(glob: string): RegExp {
  let out = ''
  for (let i = 0; i < glob.length; i++) {
    const c = glob[i]!
    if (c === '*' && glob[i + 1] === '*') {
      out += glob[i + 2] === '/' ? '(?:.*/)?' : '.*'
      i += glob[i + 2] === '/' ? 2 : 1
    } else if (c === '*') out += '[^/]*'
    else if (c === '?') out += '[^/]'
    else out += c.replace(/[.+^${}()|[\]\\]/g, '\\$&')
  }
  return new RegExp(`^${out}$`)
}

function shortHash(text: string): string {
  return createHash('sha1').update(text).digest('hex').slice(0, 7)
}

/** src/** and the top-level files, sorted: the same list on every machine. */
function listTree(tree: string): string[] {
  const out: string[] = []
  const walk = (rel: string) => {
    for (const name of readdirSync(join(tree, rel)).sort()) {
      const child = `${rel}/${name}`
      const stat = statSync(join(tree, child))
      if (stat.isDirectory()) walk(child)
      else if (stat.isFile()) out.push(child)
    }
  }
  walk('src')
  for (const name of TOP_LEVEL)
    if (statSync(join(tree, name), { throwIfNoEntry: false })?.isFile()) out.push(name)
  return out
}

/** The session's requests, one JSON line each (without the newline). */
export function* generateTrace(options: TraceOptions = {}): Generator<string> {
  const settings: Required<TraceOptions> = {
    steps: options.steps ?? 300,
    seed: options.seed ?? 1,
    tree: options.tree ?? packageRoot(),
    root: options.root ?? '/home/dev/lembas-proxy',
  }
  yield* new Session(settings).run(settings.steps)
}

async function main(argv: string[]): Promise<void> {
  const take = (name: string): string | undefined => {
    const at = argv.indexOf(name)
    if (at < 0) return undefined
    const [, value] = argv.splice(at, 2)
    return value
  }
  const steps = Number(take('--steps') ?? 300)
  const seed = Number(take('--seed') ?? 1)
  const out = take('--out')
  const replayIt = argv.includes('--replay')
  if (replayIt) argv.splice(argv.indexOf('--replay'), 1)
  if (!Number.isInteger(steps) || steps < 1 || !Number.isInteger(seed))
    throw new Error('--steps and --seed take whole numbers')
  if (replayIt) {
    const { parseReplayArgs } = await import('../../src/replay/command.js')
    const { replay } = await import('../../src/replay/replay.js')
    const { formatReport, reportJson } = await import('../../src/replay/report.js')
    const command = parseReplayArgs([...argv, `generated-${steps}`])
    if (command === 'help') throw new Error('see lembas-proxy replay --help')
    const report = await replay(
      [{ name: `generated-${steps} (seed ${seed})`, lines: generateTrace({ steps, seed }) }],
      command.options,
    )
    process.stdout.write(command.json ? reportJson(report) : formatReport(report))
    return
  }
  const stream = out === undefined ? process.stdout : createWriteStream(out)
  let bytes = 0
  for (const line of generateTrace({ steps, seed })) {
    bytes += Buffer.byteLength(line) + 1
    if (!stream.write(line + '\n')) await once(stream, 'drain')
  }
  if (out !== undefined) {
    await new Promise<void>((resolve) => stream.end(resolve))
    process.stderr.write(`${out}: ${steps} steps, ${(bytes / 1e6).toFixed(1)} MB\n`)
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    process.stderr.write(`generate: ${(error as Error).message}\n`)
    process.exit(1)
  })
}
