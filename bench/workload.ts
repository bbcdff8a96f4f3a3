/**
 * Deterministic agent sessions for the benchmark: a system prompt, Claude-Code-shaped tools, a
 * user turn, then pairs of an assistant tool call and its tool result (file reads with numbered
 * lines, shell output, globs, greps, edits), as a coding agent sends them through a router.
 *
 * A session models what a proxy really sees: request k+1 is request k plus one new assistant
 * message and one new tool result. Each request body is built by appending the new messages'
 * JSON to the previous request's, so building a step costs O(body) string work, outside any
 * timed region.
 *
 * The same session can be sent to any front door (`door`: chat completions, Messages as Claude
 * Code sends it, Responses as Codex sends it): bench/shapes.ts writes its steps in that door's
 * shape; the default, `chat`, is the bench's original workload byte for byte.
 */
import { shapeOf, type Door, type Shape, type Shaped, type ToolCall } from './shapes.js'

export { CLAUDE_TOOLS } from './shapes.js'

/** mulberry32: small, fast, and the same sequence on every machine for a given seed. */
export function makeRng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/** A 32-bit hash of a string (FNV-1a), to derive per-session seeds from names. */
export function seedOf(...parts: (string | number)[]): number {
  let h = 0x811c9dc5
  for (const ch of parts.join('/')) {
    h ^= ch.charCodeAt(0)
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h
}

const SYSTEM_SHORT =
  'You are Claude Code, an interactive CLI tool that helps users with software engineering tasks. ' +
  'Use the instructions below and the tools available to you to assist the user.\n\n' +
  'IMPORTANT: Assist with defensive security tasks only. Keep your responses short, since they ' +
  'will be displayed on a command line interface. Use Github-flavored markdown for formatting.\n\n' +
  '# Doing tasks\nThe user will primarily request you perform software engineering tasks: ' +
  'solving bugs, adding new functionality, refactoring code, explaining code. Use the Read tool ' +
  'before editing a file, run the tests with Bash after a change, and never guess file contents.\n\n' +
  '<env>\nWorking directory: /work/project\nIs directory a git repo: Yes\nPlatform: linux\n</env>'

/** The long system prompt of the large sizes: the short one plus ~10 KB of guidance. */
function longSystem(rng: () => number): string {
  const rules = [
    'Prefer editing existing files to creating new ones.',
    'When you run a non-trivial bash command, explain what it does and why.',
    'Never commit changes unless the user explicitly asks you to.',
    'Follow the conventions of the codebase: look at neighbouring files first.',
    'Do not add comments to the code you write unless asked, or the code is complex.',
    'Use the TodoWrite tool to plan multi-step tasks and mark items done as you go.',
    'Batch independent tool calls in one message to run them in parallel.',
    'Quote file paths that contain spaces with double quotes ("path with spaces/file.txt").',
  ]
  let text = SYSTEM_SHORT + '\n\n# Guidance\n'
  while (text.length < 11_000) {
    const rule = rules[Math.floor(rng() * rules.length)]!
    text += `- ${rule} (see section ${1 + Math.floor(rng() * 40)}.${Math.floor(rng() * 9)})\n`
  }
  return text
}

const WORDS = [
  'config',
  'request',
  'session',
  'buffer',
  'handler',
  'store',
  'result',
  'message',
  'stream',
  'upstream',
  'cache',
  'token',
  'parser',
  'router',
  'index',
  'value',
  'entry',
  'client',
  'server',
  'options',
]
const DIRS = ['src', 'src/http', 'src/store', 'src/pipeline', 'src/wire', 'test', 'lib', 'scripts']

/** One line of code-like text: quotes, tabs, backslashes and unicode, so JSON escaping works. */
function codeLine(rng: () => number, depth: number): string {
  const w = () => WORDS[Math.floor(rng() * WORDS.length)]!
  const n = () => Math.floor(rng() * 1000)
  const indent = depth % 3 === 2 ? '\t'.repeat(1 + (depth % 2)) : '  '.repeat(depth)
  switch (Math.floor(rng() * 12)) {
    case 0:
      return `${indent}const ${w()}${n()} = await ${w()}.get("${w()}/${n()}", { timeout: ${n()} })`
    case 1:
      return `${indent}if (${w()}.length > ${n()} && !${w()}.has('${w()}')) {`
    case 2:
      return `${indent}return ${w()}.replace(/\\s+\\d{${n() % 9}}/g, "\\\\n") // escape ${w()}`
    case 3:
      return `${indent}}`
    case 4:
      return ''
    case 5:
      return `${indent}// ${w()} → ${w()}: keep the ${w()} until the ${w()} is “done”`
    case 6:
      return `${indent}export function ${w()}${n()}(${w()}: string, ${w()} = ${n()}): number {`
    case 7:
      return `${indent}throw new Error(\`${w()} \${${w()}} failed: "\${${w()}.message}"\`)`
    case 8:
      return `${indent}log.info('${w()}', { ${w()}: ${n()}, ${w()}: "${w()}\\t${w()}" })`
    case 9:
      return `${indent}for (const [${w()}, ${w()}] of Object.entries(${w()})) ${w()}[${n()}] = ${w()}`
    case 10:
      return `${indent}import { ${w()}, ${w()} } from '../${w()}/${w()}.js'`
    default:
      return `${indent}${w()}.${w()}(${n()}, '${w()}', ${rng() < 0.5 ? 'true' : 'null'});`
  }
}

interface VFile {
  path: string
  lines: string[]
  /** Reads already shown in the history: [offset, limit], for realistic re-reads. */
  reads: [number, number | undefined][]
}

export interface SessionOptions {
  /** The seed; two sessions with the same seed are byte-identical. */
  seed: number
  /** Target size of the first request (the base history), in bytes. */
  baseBytes: number
  /** Mean size of one tool result, in bytes (heavy-tailed around it). */
  meanResultBytes: number
  /** Long (~11 KB) or short (~1 KB) system prompt. */
  longSystem: boolean
  stream: boolean
  model?: string
  /** The front door whose shape the bodies take (default chat). */
  door?: Door
  /** The client's session id where the door's agent puts it in the body (messages, responses). */
  sessionId?: string
}

/**
 * A growing agent session. `base()` is the first request; each `next()` is the previous request
 * plus one assistant tool call and its result. Bodies are Buffers, ready to send.
 */
export class AgentSession {
  private readonly rng: () => number
  private readonly files: VFile[] = []
  private readonly shape: Shape
  private readonly head: string
  private readonly tail: string
  /** The items that stay as they are, joined by commas. */
  private prefix: string
  private prefixBytes = 0
  /** The newest items while they carry a mark (Claude Code's cache breakpoints). */
  private open: { plain: string[]; marked: string[]; markedBytes: number } | undefined
  private callCount = 0
  private readonly globs: [string, string][] = []
  steps = 0
  /** Bytes of the messages added by the last next(): what is new for the proxy. */
  lastDeltaBytes = 0

  constructor(readonly options: SessionOptions) {
    this.rng = makeRng(options.seed)
    this.shape = shapeOf(options.door ?? 'chat')
    const system = options.longSystem ? longSystem(this.rng) : SYSTEM_SHORT
    const frame = this.shape.frame({
      system,
      stream: options.stream,
      sessionId: options.sessionId ?? '',
      ...(options.model === undefined ? {} : { model: options.model }),
    })
    this.head = frame.head
    this.tail = frame.tail
    const user =
      'The proxy drops a request when the upstream is slow. Find where the upstream timeout is ' +
      'handled, read the related tests, fix the bug and run the test suite.'
    this.prefix = ''
    this.add(this.shape.first(system, user))
    const frameBytes = Buffer.byteLength(this.head) + Buffer.byteLength(this.tail)
    while (frameBytes + this.bodyBytes() < options.baseBytes) this.add(this.pair())
    this.baseBody = Buffer.from(this.body())
  }

  private readonly baseBody: Buffer

  /** The first request of the session (the history the proxy sees when it first meets it). */
  base(): Buffer {
    return this.baseBody
  }

  /** The next request: the previous one plus one assistant tool call and its result. */
  next(): Buffer {
    this.lastDeltaBytes = this.add(this.pair())
    this.steps++
    return Buffer.from(this.body())
  }

  /** The item list as it is now, without its frame. */
  private body(): string {
    const items = this.open ? this.prefix + ',' + this.open.marked.join(',') : this.prefix
    return this.head + items.slice(1) + this.tail
  }

  /** Bytes of the item list (with the commas between items). */
  private bodyBytes(): number {
    return this.prefixBytes - 1 + (this.open ? this.open.markedBytes : 0)
  }

  /** Appends one step's items; returns their bytes (with one comma each). */
  private add(shaped: Shaped): number {
    if (this.open) this.settle(this.open.plain)
    this.open = undefined
    const kept = shaped.marked ? shaped.items.slice(0, -shaped.marked.length) : shaped.items
    let added = this.settle(kept)
    if (shaped.marked) {
      const plain = shaped.items.slice(-shaped.marked.length)
      added += plain.reduce((n, item) => n + 1 + Buffer.byteLength(item), 0)
      const markedBytes = shaped.marked.reduce((n, item) => n + 1 + Buffer.byteLength(item), 0)
      this.open = { plain, marked: shaped.marked, markedBytes }
    }
    return added
  }

  private settle(items: readonly string[]): number {
    let bytes = 0
    for (const item of items) {
      this.prefix += ',' + item
      bytes += 1 + Buffer.byteLength(item)
    }
    this.prefixBytes += bytes
    return bytes
  }

  /** One assistant tool call (sometimes with a sentence) and its result, in the door's shape. */
  private pair(): Shaped {
    const id = this.callId()
    const call = this.toolCall()
    const file = call.args.file_path ?? call.args.pattern ?? 'that'
    const text = this.rng() < 0.3 ? `Let me check ${String(file)}.` : ''
    return this.shape.step(id, text, call)
  }

  private callId(): string {
    const abc = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'
    let id = 'toolu_01'
    for (let i = 0; i < 22; i++) id += abc[Math.floor(this.rng() * abc.length)]
    return id + (this.callCount++).toString(36)
  }

  /** A result size drawn around the mean: mostly 0.2–1.5x, one in ten 2–4x (heavy tail). */
  private resultSize(): number {
    const m = this.options.meanResultBytes
    const r = this.rng()
    if (r < 0.1) return Math.round(m * (2 + this.rng() * 2))
    return Math.round(m * (0.2 + this.rng() * 1.3))
  }

  private toolCall(): ToolCall {
    const r = this.rng()
    if (r < 0.55) return this.read()
    if (r < 0.62 && this.files.length > 0) return this.reread()
    if (r < 0.7 && this.files.length > 0) return this.edit()
    if (r < 0.76) return this.glob()
    if (r < 0.82) return this.grep()
    return this.bash()
  }

  private newFile(bytes: number): VFile {
    const dir = DIRS[Math.floor(this.rng() * DIRS.length)]!
    const word = WORDS[Math.floor(this.rng() * WORDS.length)]!
    const path = `/work/project/${dir}/${word}-${this.files.length}.ts`
    const lines: string[] = []
    let size = 0
    let depth = 0
    // Claude Code's Read shows at most 2000 lines.
    while ((size < bytes || lines.length < 3) && lines.length < 2000) {
      const line = codeLine(this.rng, depth)
      depth = line.endsWith('{')
        ? Math.min(depth + 1, 4)
        : line.trim() === '}'
          ? Math.max(depth - 1, 0)
          : depth
      lines.push(line)
      size += line.length + 8 // the `     N→` prefix and newline
    }
    const file = { path, lines, reads: [] }
    this.files.push(file)
    return file
  }

  /** A read's result as Claude Code numbers it, and the same lines plain (as `cat` shows them). */
  private render(
    file: VFile,
    offset: number,
    limit: number | undefined,
  ): { result: string; plain: string } {
    const start = Math.max(offset, 1)
    const shown = file.lines.slice(start - 1, limit === undefined ? undefined : start - 1 + limit)
    return {
      result: shown.map((line, i) => `${String(start + i).padStart(6)}→${line}`).join('\n'),
      plain: shown.join('\n'),
    }
  }

  private read(): ToolCall {
    const bytes = this.resultSize()
    const ranged = this.rng() < 0.2
    const file = this.newFile(ranged ? bytes * 3 : bytes)
    if (!ranged) {
      file.reads.push([1, undefined])
      return { name: 'Read', args: { file_path: file.path }, ...this.render(file, 1, undefined) }
    }
    const limit = Math.max(5, Math.floor(file.lines.length / 3))
    const offset = 1 + Math.floor(this.rng() * (file.lines.length - limit))
    file.reads.push([offset, limit])
    return {
      name: 'Read',
      args: { file_path: file.path, offset, limit },
      ...this.render(file, offset, limit),
    }
  }

  /** The same file again: the same range (the proxy may stub it) or a part of a full read. */
  private reread(): ToolCall {
    const file = this.files[Math.floor(this.rng() * this.files.length)]!
    const earlier = file.reads[Math.floor(this.rng() * file.reads.length)] ?? [1, undefined]
    const [offset, limit] = earlier
    file.reads.push([offset, limit])
    const args: Record<string, unknown> = { file_path: file.path }
    if (limit !== undefined) Object.assign(args, { offset, limit })
    return { name: 'Read', args, ...this.render(file, offset, limit) }
  }

  private edit(): ToolCall {
    const file = this.files[Math.floor(this.rng() * this.files.length)]!
    const from = Math.floor(this.rng() * file.lines.length)
    const at = file.lines.findIndex((line, i) => i >= from && line.length > 10)
    const index = at >= 0 ? at : 0
    const old = file.lines[index]!
    const replacement = old + ' // checked'
    if (file.lines.indexOf(old) !== index || old.length === 0) {
      return {
        name: 'Edit',
        args: { file_path: file.path, old_string: old || 'x', new_string: replacement },
        result: `<tool_use_error>Found 2 matches of the string to replace, but replace_all is false.\nString: ${old}</tool_use_error>`,
      }
    }
    file.lines[index] = replacement
    return {
      name: 'Edit',
      args: { file_path: file.path, old_string: old, new_string: replacement },
      result: `The file ${file.path} has been updated successfully.`,
    }
  }

  private glob(): ToolCall {
    if (this.globs.length > 0 && this.rng() < 0.3) {
      const [pattern, result] = this.globs[Math.floor(this.rng() * this.globs.length)]!
      return { name: 'Glob', args: { pattern }, result }
    }
    const dir = DIRS[Math.floor(this.rng() * DIRS.length)]!
    const pattern = `${dir}/**/*.ts`
    const count = Math.max(1, Math.floor(this.resultSize() / 40))
    const paths: string[] = []
    for (let i = 0; i < count; i++)
      paths.push(`${dir}/${WORDS[Math.floor(this.rng() * WORDS.length)]}-${i}.ts`)
    const result = paths.join('\n')
    this.globs.push([pattern, result])
    return { name: 'Glob', args: { pattern }, result }
  }

  private grep(): ToolCall {
    const word = WORDS[Math.floor(this.rng() * WORDS.length)]!
    const target = this.resultSize()
    const lines: string[] = []
    let size = 0
    // Claude Code's Grep shows at most 250 lines by default.
    while (size < target && lines.length < 250) {
      const dir = DIRS[Math.floor(this.rng() * DIRS.length)]!
      const line = `${dir}/${word}-${Math.floor(this.rng() * 50)}.ts:${1 + Math.floor(this.rng() * 900)}:${codeLine(this.rng, 1)}`
      lines.push(line)
      size += line.length + 1
    }
    return {
      name: 'Grep',
      args: { pattern: word, output_mode: 'content' },
      result: lines.join('\n'),
    }
  }

  private bash(): ToolCall {
    const target = this.resultSize()
    const kind = Math.floor(this.rng() * 3)
    const lines: string[] = []
    let size = 0
    let n = 0
    const command =
      kind === 0
        ? 'npm test 2>&1 | tail -n 200'
        : kind === 1
          ? 'git diff --stat && git log --oneline -20'
          : 'ls -la src test'
    while (size < target) {
      const w = WORDS[Math.floor(this.rng() * WORDS.length)]!
      const line =
        kind === 0
          ? `${this.rng() < 0.9 ? '✔' : '✖'} ${w} ${['handles', 'rejects', 'keeps', 'streams'][n % 4]} the ${w} (${(this.rng() * 90).toFixed(3)}ms)`
          : kind === 1
            ? `${Math.floor(this.rng() * 0xfffffff)
                .toString(16)
                .padStart(7, '0')} ${w}: fix the ${w} when "${w}" is empty`
            : `-rw-r--r--  1 dev dev ${String(Math.floor(this.rng() * 90000)).padStart(6)} Dec  2 14:${String(n % 60).padStart(2, '0')} ${w}-${n}.ts`
      lines.push(line)
      size += line.length + 1
      n++
    }
    if (kind === 0) lines.push(`ℹ tests ${n}`, `ℹ pass ${n - 1}`, 'ℹ fail 1')
    let result = lines.join('\n')
    // Claude Code's Bash keeps 30,000 characters of output: the start, a marker, and the end.
    if (result.length > 30_000) {
      const cut = result.slice(15_000, -15_000).split('\n').length
      result = `${result.slice(0, 15_000)}\n\n... [${cut} lines truncated] ...\n\n${result.slice(-15_000)}`
    }
    return { name: 'Bash', args: { command }, result }
  }
}

/** The body sizes of the benchmark and the session shape that reaches each. */
export interface SizeClass {
  name: string
  /** Target size of a measured request, in bytes. */
  bytes: number
  meanResultBytes: number
  longSystem: boolean
  /** Measured steps per session before a new session starts (keeps the body near its size). */
  sessionSteps: number
  /** Default number of measured (alternating) iterations, non-streaming and streaming. */
  iterations: number
  streamIterations: number
  /** Unmeasured warm-up requests per target before the measured ones. */
  warmup: number
}

export const SIZES: Record<string, SizeClass> = {
  '10kb': {
    name: '10kb',
    bytes: 10 * 1024,
    meanResultBytes: 260,
    longSystem: false,
    sessionSteps: 5,
    iterations: 200,
    streamIterations: 100,
    warmup: 30,
  },
  '1mb': {
    name: '1mb',
    bytes: 1024 * 1024,
    meanResultBytes: 9_000,
    longSystem: true,
    sessionSteps: 20,
    iterations: 60,
    streamIterations: 30,
    warmup: 8,
  },
  '8mb': {
    name: '8mb',
    bytes: 8 * 1024 * 1024,
    meanResultBytes: 34_000,
    longSystem: true,
    sessionSteps: 20,
    iterations: 20,
    streamIterations: 10,
    warmup: 3,
  },
}

/** The size class a bench's `--size` names; an error that lists them for any other. */
export function sizeNamed(name: string): SizeClass {
  const size = SIZES[name]
  if (!size) throw new Error(`--size: one of ${Object.keys(SIZES).join(', ')}`)
  return size
}

/** A session of a size class, its base sized so the measured steps straddle the target size. */
export function sessionFor(
  size: SizeClass,
  seed: number,
  stream: boolean,
  door: Door = 'chat',
  sessionId?: string,
): AgentSession {
  // A step adds about one result plus ~350 bytes of assistant message; centre the steps.
  const growth = size.sessionSteps * (size.meanResultBytes * 1.1 + 350)
  const baseBytes = Math.max(size.bytes - growth / 2, size.bytes * 0.6)
  return new AgentSession({
    seed,
    baseBytes,
    meanResultBytes: size.meanResultBytes,
    longSystem: size.longSystem,
    stream,
    door,
    ...(sessionId === undefined ? {} : { sessionId }),
  })
}
