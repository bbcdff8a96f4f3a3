import type { Context } from 'hono'
import { ERROR_KINDS, LembasError, type ErrorKind } from '../../errors.js'
import { AUTH_HEADER } from '../../http/auth.js'
import { requestHeadersForUpstream, responseHeadersForClient } from '../../http/headers.js'
import { readBody, sseStream, upstreamResponse } from '../../http/io.js'
import type { PipelineDeps } from '../../pipeline/handle.js'
import { findSession, rebuildHistory, type Continuity } from '../../pipeline/history.js'
import { nestingDepth } from '../../pipeline/prepare.js'
import { signalledSummary, summaryIndices } from '../../session/compaction.js'
import { identify, shortHash } from '../../session/identity.js'
import { isAbortError } from '../../upstream/index.js'
import { isRecord } from '../../wire/chat.js'
import {
  anthropicErrorBody,
  completeMessages,
  hiddenKey,
  requestOf,
  streamMessages,
  type MessagesTurn,
} from './turn.js'
import {
  anthropicTool,
  chatTools,
  checkMessagesRequest,
  systemText,
  toChat,
  withPromptBlock,
  writeBack,
  type ChatView,
  type Json,
  type MessagesRequest,
  visibleKey,
} from './messages.js'

export interface MessagesDeps extends PipelineDeps {
  readonly options: { readonly compactionHeader: string; readonly maxBodyBytes: number }
}

/** `POST /v1/messages`: the Anthropic Messages API, through the same engine as chat. */
export function messagesHandler(deps: MessagesDeps) {
  return async (c: Context): Promise<Response> => {
    try {
      const rawBody = await readBody(c, deps.options.maxBodyBytes)
      return await handleMessages(
        rawBody,
        c.req.raw.headers,
        c.req.header(deps.options.compactionHeader),
        c.req.raw.signal,
        deps,
      )
    } catch (error) {
      if (isAbortError(error)) return new Response(null, { status: 499 })
      const kind: ErrorKind = error instanceof LembasError ? error.kind : 'internal'
      const message = error instanceof Error ? error.message : String(error)
      if (kind === 'internal') deps.log.error('internal-error', { message })
      else deps.log.warn('request-failed', { kind, message, format: 'anthropic' })
      return Response.json(anthropicErrorBody(kind, message), {
        status: ERROR_KINDS[kind].status,
      })
    }
  }
}

async function handleMessages(
  rawBody: Buffer,
  clientHeaders: Headers,
  compactionSignal: string | undefined,
  signal: AbortSignal,
  deps: MessagesDeps,
): Promise<Response> {
  const headers = {
    ...requestHeadersForUpstream(clientHeaders, { drop: [AUTH_HEADER] }),
    'content-type': 'application/json',
  }
  const body = parseBody(rawBody, deps.maxDepth)
  const tools = body.tools ?? []
  if (tools.length === 0) {
    // No tools: no tool results to shape and no recall to offer; the bytes go as they came.
    const response = await deps.upstream.send({
      method: 'POST',
      path: '/messages',
      headers,
      body: rawBody,
      signal,
    })
    return upstreamResponse(response)
  }
  const identity = identify(clientHeaders, identityFields(body), deps.sessionSources)
  const view = toChat(body)
  const continuity: Continuity = {
    summaries: summaryIndices(
      view.messages,
      deps.profile.compaction,
      signalledSummary(compactionSignal, view.messages),
    ),
    systemKey: systemKey(body.system, deps),
    withinMs: deps.continueWithinMs,
    now: (deps.now ?? Date.now)(),
  }
  const session = await findSession(view.messages, identity, deps.store, continuity)
  const rebuilt = await rebuildHistory(view.messages, chatTools(tools), session, deps, continuity)
  const written = writeBack(body, view, rebuilt.messages)
  const messages = await restoreHidden(written, view, session.scope, deps)
  const clientHasRecall = tools.some((tool) => tool.name === deps.recall.name)
  const fields: Json = {
    ...body,
    system: withPromptBlock(body.system, deps.promptBlock),
    tools: clientHasRecall ? tools : [...tools, anthropicTool(deps.recall.tool)],
    messages,
  }
  const turn: MessagesTurn = {
    fields,
    headers,
    signal,
    session,
    last: view.messages.at(-1),
    recall: clientHasRecall ? null : deps.recall,
    deps,
  }
  deps.recorder?.record({
    session: session.scope,
    received: rawBody.toString('utf8'),
    sent: JSON.stringify(fields),
  })
  deps.log.info('request', {
    format: 'anthropic',
    session: session.scope,
    messages: body.messages.length,
    newResults: rebuilt.stats.newResults,
    stubs: rebuilt.stats.stubs,
    stream: body.stream === true,
  })
  if (body.stream !== true) {
    const answer = await completeMessages(turn)
    return new Response(answer.body, {
      status: answer.status,
      headers: {
        ...responseHeadersForClient(answer.headers, { passthroughEncoding: false }),
        'content-type': 'application/json',
      },
    })
  }
  const first = await turn.deps.upstream.send(requestOf(turn, []))
  if (first.status !== 200) return upstreamResponse(first)
  return new Response(sseStream(streamMessages(turn, first)), {
    status: 200,
    headers: {
      ...responseHeadersForClient(first.headers, { passthroughEncoding: false }),
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      'x-accel-buffering': 'no',
    },
  })
}

function parseBody(bytes: Buffer, maxDepth: number): MessagesRequest {
  const text = bytes.toString('utf8')
  if (nestingDepth(text) > maxDepth)
    throw new LembasError('invalid_request', `the request nests deeper than ${maxDepth} levels`)
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch {
    throw new LembasError('invalid_request', 'the body is not valid JSON')
  }
  const checked = checkMessagesRequest(json)
  if (!checked.ok)
    throw new LembasError('invalid_request', `not a Messages API request: ${checked.message}`)
  return checked.value
}

/** Claude Code names its session in `metadata.user_id` (`…_session_<uuid>`): read as `user`. */
function identityFields(body: MessagesRequest): Record<string, unknown> {
  if (typeof body.user === 'string') return body
  const userId = isRecord(body.metadata) ? body.metadata.user_id : undefined
  return typeof userId === 'string' ? { ...body, user: userId } : body
}

function systemKey(system: unknown, deps: MessagesDeps): string {
  let text = systemText(system)
  for (const marker of deps.profile.compaction) {
    if (marker.role !== 'system') continue
    const at = text.search(marker.pattern)
    if (at >= 0) text = text.slice(0, at)
  }
  return shortHash(text)
}

/** Puts back, for each assistant message that stood for a recall exchange, that exchange. */
async function restoreHidden(
  messages: Json[],
  view: ChatView,
  scope: string | undefined,
  deps: MessagesDeps,
): Promise<Json[]> {
  if (scope === undefined) return messages
  const slots = view.origins.flatMap((origin, i) =>
    origin.kind === 'message' && view.messages[i]!.role === 'assistant'
      ? [{ at: origin.at, key: hiddenKey(visibleKey(view.messages[i]!, view.messages[i - 1])) }]
      : [],
  )
  if (slots.length === 0) return messages
  const found = await deps.store.get(
    scope,
    slots.map((slot) => slot.key),
  )
  const restored = new Map<number, Json[]>()
  slots.forEach((slot, i) => {
    const value = found[i]
    if (value !== undefined) restored.set(slot.at, JSON.parse(value) as Json[])
  })
  if (restored.size === 0) return messages
  return messages.flatMap((message, at) => restored.get(at) ?? [message])
}
