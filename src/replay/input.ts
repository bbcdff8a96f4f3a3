/**
 * Replay input: JSONL files, either `--record` lines (`{at, door, session, received, sent}`:
 * the client's body is `received`, the session the recorded one) or plain request bodies, one
 * per line (a file is one session), as test/fixtures/agents/<agent>/session.jsonl holds them:
 * Chat Completions, Messages (Claude Code) or Responses (Codex), told apart by their shape.
 * A file whose name ends in `.xz` is read through `xz -dc`.
 */
import { spawn } from 'node:child_process'
import { createReadStream } from 'node:fs'
import { createInterface } from 'node:readline'
import type { Readable } from 'node:stream'
import { LembasError } from '../errors.js'
import { isRecord } from '../wire/chat.js'

export interface ReplayEntry {
  /** Where the line came from, for messages: the file, its place among those given, the line. */
  readonly file: string
  readonly source: number
  readonly line: number
  /** The session's key: the recorded session, else the file. */
  readonly session: string
  /** A name for the tables. */
  readonly name: string
  /** The client's body as text, as the client sent it when the line is a plain body. */
  readonly body: string
  /** The front door it came through. */
  readonly door: DoorName
  /** When it was recorded (a --record line's `at`), in ms. */
  readonly at?: number | undefined
}

export type DoorName = 'chat' | 'messages' | 'responses'

const DOOR_NAMES: readonly string[] = ['chat', 'messages', 'responses']

export interface SkippedLine {
  readonly file: string
  readonly line: number
  readonly reason: string
}

/** A source of lines: a file on disk, or lines made in memory (tests, the trace generator). */
export interface ReplaySource {
  readonly name: string
  readonly lines: AsyncIterable<string> | Iterable<string>
}

/**
 * A file's lines, opened only when they are read (an open reader would lose them meanwhile);
 * `FILE.xz` unpacked by `xz -dc` on the way.
 */
export function fileSource(path: string): ReplaySource {
  if (path.endsWith('.xz')) return xzSource(path)
  return {
    name: path,
    lines: {
      async *[Symbol.asyncIterator]() {
        const input = createReadStream(path, 'utf8')
        try {
          yield* lines(input)
        } finally {
          input.destroy()
        }
      },
    },
  }
}

/** The program that unpacks `.xz` files, and what to do without it. */
const XZ = 'xz'
const NO_XZ = `${XZ} (from xz-utils) is not installed; install it, or unpack the file first (xz -dk FILE)`

function xzSource(path: string): ReplaySource {
  return {
    name: path,
    lines: {
      async *[Symbol.asyncIterator]() {
        const child = spawn(XZ, ['-dc', '--', path], { stdio: ['ignore', 'pipe', 'pipe'] })
        let stderr = ''
        child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
        const ended = new Promise<{ code: number | null; error?: Error }>((resolve) => {
          child.on('error', (error) => resolve({ code: null, error }))
          child.once('close', (code) => resolve({ code }))
        })
        let done = false
        try {
          yield* lines(child.stdout.setEncoding('utf8'))
          done = true
        } finally {
          if (!done) child.kill()
        }
        const { code, error } = await ended
        if ((error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT')
          throw new LembasError('config_invalid', `replay: ${path}: ${NO_XZ}`)
        if (error || code !== 0)
          throw new LembasError(
            'config_invalid',
            `replay: ${path}: ${XZ} -dc failed: ${error?.message ?? (stderr.trim() || `exit ${code}`)}`,
          )
      },
    },
  }
}

/** Throws the message naming the missing program when `xz` cannot be run. */
export async function checkXz(path: string): Promise<void> {
  const child = spawn(XZ, ['--version'], { stdio: 'ignore' })
  const error = await new Promise<Error | undefined>((resolve) => {
    child.on('error', resolve)
    child.once('close', () => resolve(undefined))
  })
  if ((error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT')
    throw new LembasError('config_invalid', `replay: ${path}: ${NO_XZ}`)
}

function lines(input: Readable): AsyncIterable<string> {
  return createInterface({ input, crlfDelay: Infinity })
}

/**
 * The entries of every source, in time order across them: `--workers` records each worker's
 * requests in a file of its own, so a session's requests are spread over several files, each in
 * the order it was written. The files are merged by their lines' `at`, one line of each held at a
 * time; files of plain bodies (no `at`) follow, in the order given. A line that is not a request
 * is reported, not fatal.
 */
export async function* readEntries(
  sources: readonly ReplaySource[],
  skipped: (line: SkippedLine) => void,
): AsyncGenerator<ReplayEntry> {
  const streams = sources.map((source, i) => sourceEntries(source, i, skipped))
  const heads: (ReplayEntry | undefined)[] = []
  for (const stream of streams) heads.push((await stream.next()).value ?? undefined)
  // Plain bodies (no `at`) after the records, file after file: each file is one session.
  const when = (entry: ReplayEntry) => entry.at ?? Infinity
  for (;;) {
    let pick = -1
    heads.forEach((head, i) => {
      if (head !== undefined && (pick < 0 || when(head) < when(heads[pick]!))) pick = i
    })
    if (pick < 0) return
    yield heads[pick]!
    heads[pick] = (await streams[pick]!.next()).value ?? undefined
  }
}

async function* sourceEntries(
  source: ReplaySource,
  index: number,
  skipped: (line: SkippedLine) => void,
): AsyncGenerator<ReplayEntry> {
  let number = 0
  for await (const raw of source.lines) {
    number++
    const text = raw.trim()
    if (text === '') continue
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch (error) {
      skipped({ file: source.name, line: number, reason: (error as Error).message })
      continue
    }
    const door = isRecord(json) && isRecord(json.received) ? (json.door ?? 'chat') : undefined
    if (door !== undefined && (typeof door !== 'string' || !DOOR_NAMES.includes(door))) {
      skipped({ file: source.name, line: number, reason: `a record of door ${String(door)}` })
    } else if (isRecord(json) && isRecord(json.received)) {
      const session = typeof json.session === 'string' ? json.session : undefined
      const at = typeof json.at === 'string' ? Date.parse(json.at) : undefined
      yield {
        file: source.name,
        source: index,
        line: number,
        session: session === undefined ? 'file:' + source.name : 'session:' + session,
        name: session === undefined ? source.name : `${source.name} ${shortSession(session)}`,
        body: JSON.stringify(json.received),
        door: door as DoorName,
        at: at !== undefined && Number.isFinite(at) ? at : undefined,
      }
    } else if (isRecord(json) && (Array.isArray(json.messages) || Array.isArray(json.input))) {
      yield {
        file: source.name,
        source: index,
        line: number,
        session: 'file:' + source.name,
        name: source.name,
        body: text,
        door: doorOfBody(json),
      }
    } else {
      skipped({ file: source.name, line: number, reason: 'neither a request nor a record' })
    }
  }
}

/**
 * The door a plain body belongs to, by its shape: Responses send `input`; a Messages request has
 * a top-level `system`, tools with an `input_schema`, or `tool_use`/`tool_result` blocks.
 */
export function doorOfBody(body: Record<string, unknown>): DoorName {
  if (Array.isArray(body.input) && !Array.isArray(body.messages)) return 'responses'
  if (body.system !== undefined) return 'messages'
  const tools = Array.isArray(body.tools) ? body.tools : []
  if (tools.some((tool) => isRecord(tool) && tool.input_schema !== undefined)) return 'messages'
  const messages = Array.isArray(body.messages) ? body.messages : []
  const anthropicBlock = (block: unknown) =>
    isRecord(block) && (block.type === 'tool_use' || block.type === 'tool_result')
  return messages.some(
    (message) =>
      isRecord(message) && Array.isArray(message.content) && message.content.some(anthropicBlock),
  )
    ? 'messages'
    : 'chat'
}

/** The end of a store scope (`tenant/e…`), enough to tell sessions apart in a table. */
function shortSession(session: string): string {
  return session.length > 12 ? '…' + session.slice(-10) : session
}
