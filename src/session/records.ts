import type { Entry, TableRead } from '../context/index.js'
import type { MessageContent } from '../wire/chat.js'

/** Store keys inside a session scope, and inside a tenant's scope. */
export const keys = {
  tool: (messageKey: string) => 'm:' + messageKey,
  /** What the upstream had where the client has the answer at a place (placeKey). */
  hidden: (place: string) => 'h:' + place,
  result: (n: number) => 'r:' + n,
  /** A file's content by its SHA-256: the base of a later edit's diff. */
  file: (sha256: string) => 'f:' + sha256,
  /** The id of a recall answer, by the answer's place, round and call. */
  recallClaim: (place: string) => 'x:' + place,
  /** The id given to the first result a tool call id came with. */
  callId: (toolCallId: string) => 't:' + toolCallId,
  compaction: (summaryKey: string) => 'c:' + summaryKey,
  /** The n-th batch of elided results (from 1). */
  elision: (n: number) => 'e:' + n,
  /** What recall shows before result n when `--elide-inputs` elided its call's long strings. */
  input: (n: number) => 'i:' + n,
  ownerOfTool: (messageKey: string) => 'o:m:' + messageKey,
  /** The session a client's own session id goes on: a fork's id, the session it forked. */
  forkOf: (explicitScope: string) => 'o:f:' + explicitScope,
  ownerOfAnswer: (place: string) => 'o:h:' + place,
  ownerOfSummary: (summaryKey: string) => 'o:c:' + summaryKey,
  /** A tenant's implicit sessions with one system prompt (a latest value). */
  sessionsOf: (systemKey: string) => 'sessions:' + systemKey,
}

/** A tool message as first rendered: written once, sent the same way in every later request. */
export interface ToolRecord {
  readonly n: number
  readonly content: MessageContent
  readonly entry?: Entry | undefined
  readonly read?: TableRead | undefined
  /** A call that read several files: those it shows in full (stubs are not reads). */
  readonly reads?: readonly TableRead[] | undefined
  /**
   * For a stub: what it names (`targets`: all the ids, when a call that read several files names
   * more than one), and the full rendering for a request that no longer has them all.
   */
  readonly stub?:
    | {
        readonly target: string
        readonly targets?: readonly string[] | undefined
        readonly content: MessageContent
        readonly entry?: Entry | undefined
        readonly read?: TableRead | undefined
      }
    | undefined
  /** The tool message before this one in the request that first carried it: a path back. */
  readonly prev?: string | undefined
  /**
   * Another text under an earlier result's id (a client's rewrite, a fork's copy): recall shows
   * that earlier text, so `--elide` never takes this one out of view.
   */
  readonly rewrite?: true | undefined
  /** The files this result shows whole, as they are after it (a full read, an edit). */
  readonly views?: readonly { readonly absPath: string; readonly sha256: string }[] | undefined
}

/** The upstream items a client-visible answer stands for (a recall exchange), in the door's shape. */
export interface HiddenRecord {
  /** The digests of the client's items it replaces, in order. */
  readonly visible: readonly string[]
  /** Another digest each may come back as (AnswerShape.alias), where one has one. */
  readonly aliases?: readonly (string | null)[]
  readonly items: readonly Record<string, unknown>[]
}

export function parseRecord<T>(value: string | undefined): T | undefined {
  return value === undefined ? undefined : (JSON.parse(value) as T)
}
