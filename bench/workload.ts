/**
 * Deterministic agent sessions for the benchmark: a system prompt, Claude-Code-shaped tools, a
 * user turn, then pairs of an assistant tool call and its tool result (file reads with numbered
 * lines, shell output, globs, greps, edits), as a coding agent sends them through a router.
 *
 * A session models what a proxy really sees: request k+1 is request k plus one new assistant
 * message and one new tool result. Each request body is built by appending the new messages'
 * JSON to the previous request's, so building a step costs O(body) string work, outside any
 * timed region.
 */
import { CLAUDE_TOOLS as AGENT_TOOLS } from '../test/helpers/agent.js'

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

/** Claude Code's tools as routers expose them: the tests' set, plus Grep. */
export const CLAUDE_TOOLS = [
  ...AGENT_TOOLS,
  {
    type: 'function',
    function: {
      name: 'Grep',
      description: 'A powerful search tool built on ripgrep',
      parameters: {
        type: 'object',
        properties: {
          pattern: { type: 'string', description: 'The regular expression pattern to search for' },
          path: { type: 'string', description: 'File or directory to search in' },
          output_mode: {
            type: 'string',
            enum: ['content', 'files_with_matches', 'count'],
            description: 'Output mode',
          },
        },
        required: ['pattern'],
      },
    },
  },
]

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
}

/**
 * A growing agent session. `base()` is the first request; each `next()` is the previous request
 * plus one assistant tool call and its result. Bodies are Buffers, ready to send.
 */
export class AgentSession {
  private readonly rng: () => number
  private readonly files: VFile[] = []
  private readonly head: string
  private readonly tail: string
  private prefix: string
  private callCount = 0
  private readonly globs: [string, string][] = []
  steps = 0
  /** Bytes of the messages added by the last next(): what is new for the proxy. */
  lastDeltaBytes = 0

  constructor(readonly options: SessionOptions) {
    this.rng = makeRng(options.seed)
    const system = options.longSystem ? longSystem(this.rng) : SYSTEM_SHORT
    this.head = `{"model":${JSON.stringify(options.model ?? 'bench-model')},"max_tokens":8192,"messages":[`
    this.tail =
      `],"tools":${JSON.stringify(CLAUDE_TOOLS)},"tool_choice":"auto",` +
      (options.stream
        ? '"stream":true,"stream_options":{"include_usage":true}}'
        : '"stream":false}')
    const user = {
      role: 'user',
      content:
        'The proxy drops a request when the upstream is slow. Find where the upstream timeout is ' +
        'handled, read the related tests, fix the bug and run the test suite.',
    }
    this.prefix = JSON.stringify({ role: 'system', content: system }) + ',' + JSON.stringify(user)
    let bytes = Buffer.byteLength(this.head + this.prefix + this.tail)
    while (bytes < options.baseBytes) {
      const pair = this.pair()
      this.prefix += ',' + pair
      bytes += Buffer.byteLength(pair) + 1
    }
    this.baseBody = Buffer.from(this.head + this.prefix + this.tail)
  }

  private readonly baseBody: Buffer

  /** The first request of the session (the history the proxy sees when it first meets it). */
  base(): Buffer {
    return this.baseBody
  }

  /** The next request: the previous one plus one assistant tool call and its result. */
  next(): Buffer {
    const pair = this.pair()
    this.lastDeltaBytes = Buffer.byteLength(pair) + 1
    this.prefix += ',' + pair
    this.steps++
    return Buffer.from(this.head + this.prefix + this.tail)
  }

  /** One assistant message (a tool call, sometimes with a sentence) and its tool result, as JSON. */
  private pair(): string {
    const id = this.callId()
    const { name, args, result } = this.toolCall()
    const assistant: Record<string, unknown> = {
      role: 'assistant',
      content:
        this.rng() < 0.3 ? `Let me check ${String(args.file_path ?? args.pattern ?? 'that')}.` : '',
      tool_calls: [{ id, type: 'function', function: { name, arguments: JSON.stringify(args) } }],
    }
    const tool = { role: 'tool', tool_call_id: id, content: result }
    return JSON.stringify(assistant) + ',' + JSON.stringify(tool)
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

  private toolCall(): { name: string; args: Record<string, unknown>; result: string } {
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

  private render(file: VFile, offset: number, limit: number | undefined): string {
    const start = Math.max(offset, 1)
    const shown = file.lines.slice(start - 1, limit === undefined ? undefined : start - 1 + limit)
    return shown.map((line, i) => `${String(start + i).padStart(6)}→${line}`).join('\n')
  }

  private read(): { name: string; args: Record<string, unknown>; result: string } {
    const bytes = this.resultSize()
    const ranged = this.rng() < 0.2
    const file = this.newFile(ranged ? bytes * 3 : bytes)
    if (!ranged) {
      file.reads.push([1, undefined])
      return {
        name: 'Read',
        args: { file_path: file.path },
        result: this.render(file, 1, undefined),
      }
    }
    const limit = Math.max(5, Math.floor(file.lines.length / 3))
    const offset = 1 + Math.floor(this.rng() * (file.lines.length - limit))
    file.reads.push([offset, limit])
    return {
      name: 'Read',
      args: { file_path: file.path, offset, limit },
      result: this.render(file, offset, limit),
    }
  }

  /** The same file again: the same range (the proxy may stub it) or a part of a full read. */
  private reread(): { name: string; args: Record<string, unknown>; result: string } {
    const file = this.files[Math.floor(this.rng() * this.files.length)]!
    const earlier = file.reads[Math.floor(this.rng() * file.reads.length)] ?? [1, undefined]
    const [offset, limit] = earlier
    file.reads.push([offset, limit])
    const args: Record<string, unknown> = { file_path: file.path }
    if (limit !== undefined) Object.assign(args, { offset, limit })
    return { name: 'Read', args, result: this.render(file, offset, limit) }
  }

  private edit(): { name: string; args: Record<string, unknown>; result: string } {
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

  private glob(): { name: string; args: Record<string, unknown>; result: string } {
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

  private grep(): { name: string; args: Record<string, unknown>; result: string } {
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

  private bash(): { name: string; args: Record<string, unknown>; result: string } {
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

/** A session of a size class, its base sized so the measured steps straddle the target size. */
export function sessionFor(size: SizeClass, seed: number, stream: boolean): AgentSession {
  // A step adds about one result plus ~350 bytes of assistant message; centre the steps.
  const growth = size.sessionSteps * (size.meanResultBytes * 1.1 + 350)
  const baseBytes = Math.max(size.bytes - growth / 2, size.bytes * 0.6)
  return new AgentSession({
    seed,
    baseBytes,
    meanResultBytes: size.meanResultBytes,
    longSystem: size.longSystem,
    stream,
  })
}
