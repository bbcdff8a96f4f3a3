import {
  DedupeTable,
  formatId,
  legacyLineHashes,
  renderResult,
  renderRewritten,
  type ContextRules,
  type Rendering,
  type TableRead,
} from '../context/index.js'
import { pacer } from '../pace/index.js'
import type { SessionRef } from '../session/find.js'
import { keys, parseRecord, type ToolRecord } from '../session/records.js'
import { classifyCall, splitTrailer } from '../tools/index.js'
import {
  contentText,
  withText,
  type ChatMessage,
  type ToolCall,
  type ToolDefinition,
} from '../wire/chat.js'
import { claimAndWrite } from './next-ids.js'
import { blindAbsPath, changedFiles, resultFacts, type Facts, type FileViews } from './facts.js'
import type { HistoryDeps, HistoryState, HistoryStats } from './rebuild.js'
import type { Elision } from '../session/elision.js'

/** A tool message of the request: its place in the view and its key. */
export interface Fresh {
  readonly index: number
  readonly message: ChatMessage
  readonly key: string
}

/** The first result a tool call id came with: its id, and the message it was. */
export interface CallIdRecord {
  readonly n: number
  readonly key: string
  /**
   * What a rewrite of it needs, so it is known without another read: the tool message before it
   * and its read (a stub's: none). Absent in records of earlier versions: read from its record.
   */
  readonly prev?: string | null
  readonly read?: TableRead
  /** A call that read several files: the reads it showed in full. */
  readonly reads?: readonly TableRead[]
}

/** A result the client rewrote: the id it keeps, and the reads it showed (for the table). */
interface Rewrite {
  readonly n: number
  readonly read: TableRead | undefined
  readonly reads?: readonly TableRead[] | undefined
}

export interface FreshInput {
  readonly messages: readonly ChatMessage[]
  readonly definitions: readonly ToolDefinition[]
  readonly session: SessionRef
  readonly start?: HistoryState | undefined
  /** Every tool message of the request, in order. */
  readonly tools: readonly Fresh[]
  readonly fresh: readonly Fresh[]
  readonly known: ReadonlyMap<string, ToolRecord>
  readonly callIds: ReadonlyMap<string, CallIdRecord>
  readonly elision: Elision
  /** File contents read in the request's one batched read, by SHA-256 (see editBases). */
  readonly bases?: ReadonlyMap<string, string | undefined> | undefined
  /**
   * Writes that go with the renderings' (the session's head for a later compaction, the new
   * results' owner in the tenant's index): started with them, so that a store committing a
   * turn's writes together takes them all at once.
   */
  readonly alongside?: ((scope: string) => Promise<unknown>) | undefined
}

/** What renderings saved in one request (see HistoryStats). */
export type Savings = Pick<
  HistoryStats,
  'dedupes' | 'caps' | 'charsSaved' | 'unrecognised' | 'results'
>

/**
 * Gives new tool messages their ids and renderings, in message order: the dedupe table and the
 * file views are what this request carries before each result. Written in one atomic batch
 * with the full results they stand for; first writer wins.
 *
 * The ids come from the session's counter. When this process knows the counter's next number
 * (it claimed the session's last ids: results' and recall answers'), it renders with the numbers
 * that follow and claims them in the same batch as the write: one store round trip (one commit)
 * instead of two. A guess that was wrong (another process took numbers meanwhile) writes
 * nothing: the results are rendered again with the numbers the claim gave, and written.
 */
export async function renderFresh(
  input: FreshInput,
  deps: HistoryDeps,
  savings: Savings,
): Promise<Map<string, ToolRecord>> {
  const scope = input.session.ensure()
  const rewrites = await rewrittenResults(input, deps, scope)
  const claims = input.fresh
    .filter((slot) => !rewrites.has(slot.key))
    .map((slot) => keys.tool(slot.key))
  const { rendered, winners } = await claimAndWrite(
    deps.store,
    deps.memos.nextIds,
    scope,
    claims,
    (ids) => renderAll(input, deps, scope, rewrites, ids),
    input.alongside && (() => input.alongside!(scope)),
  )
  return finish(rendered, winners, savings)
}

/** New results rendered with their ids: the records by key, what to write, what they saved. */
interface Rendered {
  readonly records: Map<string, ToolRecord>
  /** The records first (their winners are read back), then the results and file contents. */
  readonly entries: (readonly [string, string])[]
  readonly savings: Savings
}

async function renderAll(
  input: FreshInput,
  deps: HistoryDeps,
  scope: string,
  rewrites: ReadonlyMap<string, Rewrite>,
  claimed: readonly number[],
): Promise<Rendered> {
  const { fresh, start } = input
  let nextClaimed = 0
  const numbers = fresh.map((slot) => rewrites.get(slot.key)?.n ?? claimed[nextClaimed++]!)
  const freshAt = new Map(fresh.map((slot, i) => [slot.index, i]))
  const order = new InOrder(input, deps, scope)
  const savings: Savings = { dedupes: 0, caps: 0, charsSaved: 0 }
  const records = new Map<string, ToolRecord>()
  const writes: (readonly [string, string])[] = []
  let previousKey = start?.lastToolKey
  const pace = pacer()
  for (const tool of input.tools) {
    await pace()
    const i = freshAt.get(tool.index)
    const prev = previousKey
    previousKey = tool.key
    if (i === undefined) {
      // An elided result is no stub target: a later one is shown in full.
      if (!input.elision.texts.has(tool.key)) order.shown(input.known.get(tool.key))
      continue
    }
    const number = numbers[i]!
    const rewrite = rewrites.get(tool.key)
    const text = contentText(tool.message.content)
    // What the agent appended after the tool's output is no part of it: kept after the rendering.
    const { body, trailer } = rewrite
      ? { body: text, trailer: '' }
      : splitTrailer(text, deps.profile.trailers, textOnly(tool.message.content))
    const { rendering: bare, facts } = await order.render(tool.message, body, number, rewrite)
    countSavings(savings, body, bare, number, deps.rules, facts?.call.kind)
    if (facts?.unrecognised) {
      const name = order.toolName(tool.message) ?? ''
      savings.unrecognised = [
        ...(savings.unrecognised ?? []),
        { tool: name, expected: facts.unrecognised },
      ]
    }
    const rendering = withTrailer(bare, trailer)
    noteResult(savings, number, bare, body, rewrite ? 'rewritten' : facts?.call.kind, deps.rules)
    const record = toolRecord(tool.message, number, rendering, facts, prev, rewrite !== undefined)
    for (const view of facts?.views ?? [])
      writes.push([keys.file(view.sha256), wellFormed(view.content)])
    records.set(tool.key, record)
    // A rewrite is not a new result: the full text of its id stays what it was.
    if (!rewrite) {
      writes.push([keys.result(number), wellFormed(rendering.stored ?? body)])
      const first: CallIdRecord = {
        n: number,
        key: tool.key,
        prev: prev ?? null,
        ...(record.read && !record.stub ? { read: record.read } : {}),
        ...(record.reads?.length ? { reads: record.reads } : {}),
      }
      writes.push([keys.callId(tool.message.tool_call_id ?? ''), JSON.stringify(first)])
    }
    order.shown(record)
  }
  // One atomic batch: the renderings with the full results and file contents they stand for,
  // so no rendering is ever stored without what its recall shows.
  const entries: (readonly [string, string])[] = []
  for (const [key, record] of records) {
    await pace()
    entries.push([keys.tool(key), JSON.stringify(record)])
  }
  // Not push(...writes): a request of 65,000 results would overflow the stack.
  return { records, entries: entries.concat(writes), savings }
}

/**
 * The records as the store holds them, and what they saved. First writer wins: a concurrent
 * twin of this request reads ours back, and we theirs.
 */
async function finish(
  rendered: Rendered,
  winners: readonly string[],
  savings: Savings,
): Promise<Map<string, ToolRecord>> {
  Object.assign(savings, rendered.savings)
  const out = new Map<string, ToolRecord>()
  const pace = pacer()
  let i = 0
  for (const [key, record] of rendered.records) {
    await pace()
    const won = winners[i]!
    // Ours won (the common case): the record as built; a concurrent twin's as it was written.
    out.set(key, won === rendered.entries[i]![1] ? record : (JSON.parse(won) as ToolRecord))
    i++
  }
  return out
}

/** What the request shows before the result being rendered: its dedupe table and file views. */
class InOrder {
  readonly #table: DedupeTable
  /** A file's content as the request last showed it. */
  readonly #views: Map<string, { sha256: string; content?: string }>
  readonly #calls: Map<string, ToolCall>
  readonly #definitions: Map<string, ToolDefinition>
  readonly #fileViews: FileViews

  constructor(
    input: FreshInput,
    private readonly deps: HistoryDeps,
    scope: string,
  ) {
    this.#table = input.start?.table.clone() ?? new DedupeTable()
    this.#views = new Map(input.start?.views ?? [])
    this.#calls = requestCalls(input)
    this.#definitions = definitionsByName(input.definitions)
    const views = this.#views
    const bases = input.bases
    this.#fileViews = {
      async content(absPath) {
        const view = views.get(absPath)
        if (!view) return undefined
        if (view.content !== undefined) return view.content
        if (bases?.has(view.sha256)) return bases.get(view.sha256)
        const [stored] = await deps.store.get(scope, [keys.file(view.sha256)])
        return stored
      },
    }
  }

  /** A result the request carries, known or just rendered: later ones see it. */
  shown(record: ToolRecord | undefined): void {
    if (!record) return
    addShown(this.#table, record)
    for (const view of record.views ?? [])
      if (!this.#views.get(view.absPath) || this.#views.get(view.absPath)!.sha256 !== view.sha256)
        this.#views.set(view.absPath, { sha256: view.sha256 })
  }

  /** The name of the tool whose call a tool message answers. */
  toolName(message: ChatMessage): string | undefined {
    return this.#calls.get(message.tool_call_id ?? '')?.function.name
  }

  /** A new result's rendering, with the file facts of this moment. */
  async render(
    message: ChatMessage,
    text: string,
    number: number,
    rewrite: Rewrite | undefined,
  ): Promise<{ rendering: Rendering; facts: Facts | undefined }> {
    const { deps } = this
    const call = this.#calls.get(message.tool_call_id ?? '')
    // A result that carries an image or a document (Claude Code's Read of a PNG or a PDF, its
    // text only the reminders after it) shows no file's lines and no change: shown as it came.
    const classified =
      call && !carriesMedia(message)
        ? classifyCall(deps.profile, call.function.name, call.function.arguments, this.#definitions)
        : ({ kind: 'other' } as const)
    const facts = rewrite
      ? undefined
      : await resultFacts(classified, text, deps.profile, deps.workspace, this.#fileViews)
    for (const view of facts?.views ?? [])
      this.#views.set(view.absPath, { sha256: view.sha256, content: view.content })
    const rendering: Rendering = facts
      ? renderResult({ number, call: facts.call, text }, this.#table, deps.rules)
      : {
          text: renderRewritten(number, text, deps.rules),
          read: rewrite?.read,
          ...(rewrite?.reads ? { reads: rewrite.reads } : {}),
        }
    return { rendering, facts }
  }
}

/**
 * The SHA-256s of the file contents the request's edits, writes and patches may diff against:
 * the views, from before this request, of the files they name. They are read with the request's
 * records in its one batched read, so an edit needs no read of its own (and no cache to hold
 * every file shown). By the path as the call gives it: a workspace's real path is only known
 * once the file is read, and then the file itself is the base; a view missed here is read when
 * the edit needs it.
 */
export function editBases(
  input: Pick<FreshInput, 'messages' | 'definitions' | 'start'>,
  tools: readonly Fresh[],
  profile: HistoryDeps['profile'],
): string[] {
  const views = input.start?.views
  if (!views || views.size === 0) return []
  const calls = requestCalls(input)
  const definitions = definitionsByName(input.definitions)
  const shas = new Set<string>()
  for (const tool of tools) {
    const call = calls.get(tool.message.tool_call_id ?? '')
    if (!call) continue
    const classified = classifyCall(
      profile,
      call.function.name,
      call.function.arguments,
      definitions,
    )
    if (classified.kind !== 'edit' && classified.kind !== 'write' && classified.kind !== 'patch')
      continue
    for (const path of changedFiles(classified)) {
      const view = views.get(blindAbsPath(path))
      if (view) shas.add(view.sha256)
    }
  }
  return [...shas]
}

/** A new result as rendered: its id, what it was shown as, its size before and after. */
export interface NewResult {
  readonly id: string
  readonly kind: string
  readonly charsBefore: number
  readonly charsAfter: number
}

/** New results a request reports, its last ones: enough for a dashboard, bounded. */
export const RECENT_RESULTS = 50

/** Keeps the request's last new results for the stats: id, how it was shown, sizes. */
function noteResult(
  savings: Savings,
  number: number,
  rendering: Rendering,
  text: string,
  kind: string | undefined,
  rules: ContextRules,
): void {
  const shown = rendering.stub
    ? kind === 'read' || kind === 'reads'
      ? 'read: unchanged'
      : 'same result'
    : rendering.text.length < text.length && (kind === 'other' || kind === 'listing')
      ? `${kind === 'other' ? 'output' : 'listing'}: capped`
      : kind === 'edit' || kind === 'patch'
        ? `${kind}: diff`
        : kind === 'other'
          ? 'output'
          : (kind ?? 'output')
  const results = (savings.results ??= [])
  results.push({
    id: formatId(number, rules.ids.digits),
    kind: shown,
    charsBefore: text.length,
    charsAfter: rendering.text.length,
  })
  if (results.length > RECENT_RESULTS) results.shift()
}

const MEDIA = /^(?:image|image_url|input_image|document|file|input_file)$/

/** The message's content has a part that is no text: an image, a document. */
function carriesMedia(message: ChatMessage): boolean {
  return Array.isArray(message.content) && message.content.some((part) => MEDIA.test(part.type))
}

/** A rendering, its stub's full form too, with the agent's trailer after it. */
/** Content of text alone (a result with an image or a document beside its text is not). */
function textOnly(content: ChatMessage['content']): boolean {
  return !Array.isArray(content) || content.every((part) => part.type === 'text')
}

function withTrailer(rendering: Rendering, trailer: string): Rendering {
  if (trailer === '') return rendering
  return {
    ...rendering,
    text: rendering.text + trailer,
    ...(rendering.stub && {
      stub: {
        ...rendering.stub,
        full: { ...rendering.stub.full, text: rendering.stub.full.text + trailer },
      },
    }),
  }
}

function toolRecord(
  message: ChatMessage,
  number: number,
  rendering: Rendering,
  facts: Facts | undefined,
  prev: string | undefined,
  rewrite: boolean,
): ToolRecord {
  return {
    n: number,
    content: withText(message.content, rendering.text),
    entry: rendering.entry,
    read: rendering.read,
    ...(rendering.reads ? { reads: rendering.reads } : {}),
    stub: rendering.stub && {
      target: rendering.stub.target,
      ...(rendering.stub.targets ? { targets: rendering.stub.targets } : {}),
      content: withText(message.content, rendering.stub.full.text),
      entry: rendering.stub.full.entry,
      read: rendering.stub.full.read,
    },
    views: facts?.views?.map((view) => ({ absPath: view.absPath, sha256: view.sha256 })),
    prev,
    ...(rewrite ? { rewrite: true } : {}),
  }
}

/**
 * A tool message whose call id the session knows, with other content, where that result stood
 * (after the same tool message), is the client's own rewrite of an old result (a pruned
 * "[Old tool result content cleared]"): it keeps its id and read. A call id reused elsewhere is new.
 */
async function rewrittenResults(
  input: FreshInput,
  deps: HistoryDeps,
  scope: string,
): Promise<Map<string, Rewrite>> {
  const previousKeys = new Map<number, string | undefined>()
  let previous = input.start?.lastToolKey
  for (const tool of input.tools) {
    previousKeys.set(tool.index, previous)
    previous = tool.key
  }
  const earlier = input.fresh.map((slot) => input.callIds.get(slot.message.tool_call_id ?? ''))
  // Records of earlier versions hold only the id and key: their message's record tells the rest.
  const older = earlier.flatMap((original) =>
    original && original.prev === undefined ? [keys.tool(original.key)] : [],
  )
  const records = older.length > 0 ? await deps.store.get(scope, older) : []
  let next = 0
  const rewrites = new Map<string, Rewrite>()
  input.fresh.forEach((slot, i) => {
    const original = earlier[i]
    if (!original) return
    let known: (Omit<Rewrite, 'n'> & { prev: string | undefined }) | undefined
    if (original.prev !== undefined)
      known = { prev: original.prev ?? undefined, read: original.read, reads: original.reads }
    else {
      const record = parseRecord<ToolRecord>(records[next++])
      known = record && { prev: record.prev, read: record.stub ? undefined : record.read }
    }
    if (known && known.prev === previousKeys.get(slot.index))
      rewrites.set(slot.key, { n: original.n, read: known.read, reads: known.reads })
  })
  return rewrites
}

function countSavings(
  savings: Savings,
  text: string,
  rendering: Rendering,
  number: number,
  rules: ContextRules,
  kind: string | undefined,
): void {
  if (rendering.stub) savings.dedupes++
  else if (rendering.stored !== undefined) {
    if (rendering.stored !== rendering.text) savings.caps++ // an edit's diff, cut
  } else if ((kind === 'listing' || kind === 'other') && rendering.text.length > 0) {
    // Uncut, these are the text under its id: anything else was cut to the cap.
    if (rendering.text !== renderRewritten(number, text, rules)) savings.caps++
  }
  const saved = text.length - rendering.text.length
  if (saved > 0) savings.charsSaved += saved
}

/**
 * Text as the store can keep it exactly: a lone UTF-16 surrogate (an agent that cut its output
 * in the middle of an emoji) becomes U+FFFD, so such a result is stored, not refused.
 */
function wellFormed(text: string): string {
  return (text as unknown as { toWellFormed(): string }).toWellFormed()
}

/** Adds what a rendering shows to the table; a stub whose target is gone shows in full. */
export function addShown(
  table: DedupeTable,
  record: ToolRecord,
): { content: ToolRecord['content']; stub: boolean } {
  if (record.stub && stubTargets(record.stub).every((target) => table.has(target))) {
    // A call that read several files shows the ones it did not stub in full: targets too.
    if (record.entry) table.add(legacyLineHashes(record.entry))
    return { content: record.content, stub: true }
  }
  const entry = record.stub ? record.stub.entry : record.entry
  if (entry) table.add(legacyLineHashes(entry))
  return { content: record.stub ? record.stub.content : record.content, stub: false }
}

/** The ids a stored stub names: one, or those of a call that read several files. */
export function stubTargets(stub: NonNullable<ToolRecord['stub']>): readonly string[] {
  return stub.targets ?? [stub.target]
}

/** The calls a request's results answer: those before it (the fast path's start) and its own. */
function requestCalls(input: Pick<FreshInput, 'messages' | 'start'>): Map<string, ToolCall> {
  return new Map([...(input.start?.calls ?? []), ...toolCallsById(input.messages)])
}

function definitionsByName(definitions: readonly ToolDefinition[]): Map<string, ToolDefinition> {
  return new Map(
    definitions.flatMap((tool) => (tool.function?.name ? [[tool.function.name, tool]] : [])),
  )
}

function toolCallsById(messages: readonly ChatMessage[]): Map<string, ToolCall> {
  const calls = new Map<string, ToolCall>()
  for (const message of messages)
    for (const call of message.tool_calls ?? []) calls.set(call.id, call)
  return calls
}
