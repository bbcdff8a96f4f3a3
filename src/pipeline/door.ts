import type { ErrorKind } from '../errors.js'
import type { ChatMessage, Parsed, ToolCall, ToolDefinition } from '../wire/chat.js'
import type { SseEvent } from '../wire/sse.js'
import type { AnswerShape } from '../session/answers.js'

/** A JSON object as the client sent it: every field a door does not read goes on untouched. */
export type Json = Record<string, unknown>

/**
 * The rebuild's view of a request's items: messages with a role, content, tool calls and the
 * call a tool result answers. `origins[i]` is the index of the item view message `i` came from.
 */
export interface View {
  readonly messages: ChatMessage[]
  readonly origins: readonly number[]
}

/** One unit of a model's answer in the door's own shape, and the tool call it is, if any. */
export interface Part {
  /** A chat text or tool call; a Messages content block; a Responses output item. */
  readonly raw: Json
  readonly call?: ToolCall | undefined
}

/** What one upstream round said, read from a whole answer or a stream. */
export interface RoundEnd {
  readonly parts: readonly Part[]
  readonly usage: unknown
  /** llama.cpp's `timings` (chat only). */
  readonly timings?: unknown
  /** Events kept back until the round's end: sent as they came when nothing was recalled. */
  readonly held: readonly string[]
  /** Events to send at the round's end whatever comes next (calls whose name came late). */
  readonly out?: readonly string[] | undefined
  /**
   * The upstream ended the round as its grammar ends one (chat: a finish chunk or `[DONE]`;
   * Messages: `message_stop`; Responses: `response.completed`). A stream cut before that is the
   * upstream's failure, never passed off as a whole answer.
   */
  readonly complete: boolean
}

/** The proxy's answer to one recall call: the tool result the upstream gets. */
export interface RecallReply {
  readonly callId: string
  readonly content: string
}

/** The stream of one client answer across recall rounds, in the door's event grammar. */
export interface DoorStream {
  /** One upstream event: the SSE text for the client now; `stop` when the upstream failed. */
  take(event: SseEvent): { readonly out: readonly string[]; readonly stop?: boolean }
  /** Ends the current upstream round. */
  endRound(): RoundEnd
  /** The closing events after a recall: the visible parts of every round, summed usage. */
  close(visible: readonly Part[], usage: unknown): string[]
  /** The events of a text the proxy adds after what the client has seen (see `textPart`). */
  say(text: string): string[]
  /**
   * A failure mid-stream, as the door's error event; `own`: the upstream's error type and code
   * when it answered with its own error (an SDK retries an `overloaded_error`, a `rate_limit_error`).
   */
  error(kind: ErrorKind, message: string, own?: UpstreamError): string
}

/** The type and code of an error body the upstream sent (OpenAI's or Anthropic's shape). */
export interface UpstreamError {
  readonly type?: string | undefined
  readonly code?: string | undefined
  readonly message?: string | undefined
  /** The HTTP status it came with: what a client of another API shape goes by. */
  readonly status?: number | undefined
}

/**
 * The `error` object of an upstream's body (`{error:{…}}`, Anthropic's `{type,error:{…}}`), or
 * the body itself where it is the error (vLLM before 0.10: `{"object":"error","message":…}`).
 */
export function upstreamError(body: unknown): UpstreamError | undefined {
  const whole = typeof body === 'object' && body !== null ? (body as Json) : undefined
  const error = whole?.object === 'error' ? whole : whole?.error
  if (typeof error !== 'object' || error === null) return undefined
  const text = (value: unknown) => (typeof value === 'string' ? value : undefined)
  const { type, code, message } = error as Json
  // vLLM, llama.cpp and OpenRouter give the status as a number there.
  const coded = typeof code === 'number' ? String(code) : text(code)
  return { type: text(type), code: coded, message: text(message) }
}

/**
 * One wire format, as the pipeline sees it (the adapters in src/doors implement it). A door parses and checks its requests, maps their items to and from the
 * rebuild's view, adds the prompt block and `recall` in its own shape, reads answers (whole and
 * streamed) and writes the client's answer back. Everything else is the shared pipeline's.
 */
export interface Door extends AnswerShape {
  readonly name: 'chat' | 'responses' | 'messages'
  /** The upstream path, under the upstream's base URL. */
  readonly path: string
  /** The request's array of items: messages or input. */
  readonly arrayKey: 'messages' | 'input'
  /**
   * Items at the end of a request the client may still change in the next one (Claude Code
   * moves its cache breakpoint): the fast path remembers the request up to before them.
   */
  holdback(items: readonly Json[]): number
  errorBody(kind: ErrorKind, message: string): Json

  /** What a request of this door is called in an error ("not a Messages API request: …"). */
  readonly label: string
  /** The request's shape, checked. */
  check(body: unknown): Parsed<Json>
  /**
   * Whether the request offers tools (the recall tool joins them). One that offers none goes on
   * as it came, unless it carries tool results (an agent's summarisation request).
   */
  shaped(request: Json): boolean
  /**
   * Whether the request asks the server to summarise the history, beside offering no tools
   * (Codex's built-in provider: an input that ends `compaction_trigger`): no `--elide` batch then.
   */
  summarising?(items: readonly Json[]): boolean
  stream(request: Json): boolean
  /** The client's tools as chat definitions, for classifying calls. */
  definitions(request: Json): ToolDefinition[]
  /** The name of a tool the client defines itself, when one is `name`. */
  definesTool(request: Json, name: string): boolean
  /** Where the request may name its session: the body, with a door's own fields mapped. */
  identityFields(request: Json): Json
  /** The system prompt's text (chat: its first system message), for a session's fingerprint. */
  systemText(request: Json, view: View): string

  toView(items: readonly Json[]): View
  /**
   * The items with the rebuild's renderings written back (tool results, summary tables); where
   * an item goes upstream as several, their list.
   */
  writeBack(
    items: readonly Json[],
    view: View,
    rendered: readonly ChatMessage[],
  ): (Json | readonly Json[])[]
  /** The fields with the prompt block and the recall tool in the door's shape. */
  withRecall(request: Json, block: string, recall: ToolDefinition | undefined): Json
  /**
   * The first item's upstream items with the prompt block, where the door puts it there (chat:
   * in the first system message, or a new one before it; Responses without `instructions`: a
   * developer message of its own, after the client's prompt); as they are where withRecall put
   * it in a field.
   */
  withBlockItems(items: readonly Json[], block: string, request: Json): Json[]
  /**
   * Takes out, in place, the upstream items the API would refuse for an answer the proxy hid
   * (Responses: a reasoning item left without the call it preceded); absent where none can be.
   */
  dropUnfollowed?(perItem: Json[][]): void

  /** A whole answer's parts; undefined when it is not the door's answer (sent as it came). */
  readAnswer(json: unknown): RoundEnd | undefined
  /** What the upstream said in a round, as the items it will see again. */
  assistantItems(parts: readonly Part[]): Json[]
  /** The proxy's recall answers as the items that follow them. */
  replyItems(replies: readonly RecallReply[]): Json[]
  /** The client's whole answer: the last round's body with only the visible parts. */
  clientAnswer(last: Json, visible: readonly Part[], recalled: boolean, usage: unknown): Json
  /** A text the proxy adds to the answer, as one of the door's parts. */
  textPart(text: string): Part
  openStream(request: Json, isRecall: (name: string) => boolean): DoorStream
}
