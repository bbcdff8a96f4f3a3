import { randomUUID } from 'node:crypto'
import { keys, parseRecord, type ToolRecord } from './records.js'
import { readHead } from './tables.js'
import type { Store } from '../store/store.js'
import type { Memos } from '../memo.js'
import { explicitScope, implicitScope, type Identity } from './identity.js'

/** A request's session: its scope once known or created. */
export class SessionRef {
  constructor(
    readonly identity: Identity,
    public scope: string | undefined,
  ) {}

  /** The scope, created for a client that has not been seen before. */
  ensure(): string {
    this.scope ??= implicitScope(this.identity, randomUUID())
    return this.scope
  }
}

/** How a session that compacted without an explicit id is found again. */
export interface Continuity {
  /** Where the agent's summaries stand in the request's view. */
  readonly summaries: readonly number[]
  /** A fingerprint of the system prompt (without any summary in it). */
  readonly systemKey: string
  /** Only sessions active this recently are candidates. */
  readonly withinMs: number
  readonly now: number
}

/** What tells a fork (see followFork): the request's tool results, and whether the model answered after the newest. */
export interface ForkSigns {
  readonly results: readonly (string | undefined)[]
  readonly answered: boolean
}

/**
 * Finds the session a request belongs to: its explicit id (or the session a fork under that id
 * goes on); else the session that owns any tool result, answer or summary the request carries
 * (`owners`: tenant keys, implicit identity); else, right after a compaction (a recognised
 * summary and nothing else known), the one session of the tenant with the same system prompt
 * that was active recently, when there is exactly one; else none yet.
 */
export async function findSession(
  owners: readonly string[],
  identity: Identity,
  store: Store,
  continuity: Continuity,
  fork: ForkSigns,
): Promise<SessionRef> {
  if (identity.explicit) {
    const named = explicitScope({ ...identity, explicit: identity.explicit })
    const session = new SessionRef(identity, named)
    await followFork(session, fork.results, fork.answered, store)
    return session
  }
  const found = owners.length > 0 ? await store.get(identity.tenant, owners) : []
  const owner = found.find((value) => value !== undefined)
  if (owner !== undefined || continuity.summaries.length === 0) {
    return new SessionRef(identity, owner)
  }
  return new SessionRef(identity, await continuedSession(identity, store, continuity))
}

/**
 * A client that forks a conversation (Claude Code's `--fork-session`, opencode's `--fork`) sends
 * its history under a new session id. The session that owns the history's newest result goes on
 * under the new id: the ids, renderings and recall exchanges that history carries are the ones
 * sent before, and recall reaches every result of it. Asked only of a request this process
 * holds no state for. A fork is told by what only a fork carries: the model's answer after the
 * newest result (a session's own request ends with its new results), a result before it that
 * the owner saw right before it (one alone, a server that names every call `call_0` and the same
 * first command, could be any session's), and nothing of it rendered under the new id.
 */
export async function followFork(
  session: SessionRef,
  results: readonly (string | undefined)[],
  answered: boolean,
  store: Store,
): Promise<void> {
  const own = session.scope
  if (!session.identity.explicit || own === undefined) return
  const [newest, before] = results
    .filter((key) => key !== undefined)
    .slice(-2)
    .reverse()
  if (newest === undefined) return
  const { tenant } = session.identity
  const [forked, owner] = await store.get(tenant, [keys.forkOf(own), keys.ownerOfTool(newest)])
  if (forked !== undefined) {
    session.scope = forked
    return
  }
  if (!answered || before === undefined || owner === undefined || owner === own) return
  const [[mine], [theirs]] = await Promise.all([
    store.get(own, [keys.tool(newest)]),
    store.get(owner, [keys.tool(newest)]),
  ])
  if (mine !== undefined || parseRecord<ToolRecord>(theirs)?.prev !== before) return
  const [winner] = await store.putIfAbsent(tenant, [[keys.forkOf(own), owner]])
  session.scope = winner
}

/**
 * A session with an id of its own names itself the owner of the newest result it renders first
 * in a request (an implicit session claims all of them before rendering): a fork of it carries
 * that result as its newest, wherever it was forked between two turns. One entry a request,
 * since the tenant's index stays as long as any of its sessions is active.
 */
export function ownNewest(
  session: SessionRef,
  scope: string,
  newest: string | undefined,
  store: Store,
): Promise<unknown> {
  if (!session.identity.explicit || newest === undefined) return Promise.resolve()
  return store.putIfAbsent(session.identity.tenant, [[keys.ownerOfTool(newest), scope]])
}

async function continuedSession(
  identity: Identity,
  store: Store,
  continuity: Continuity,
): Promise<string | undefined> {
  const listed =
    parseRecord<string[]>(
      await store.getLatest(identity.tenant, keys.sessionsOf(continuity.systemKey)),
    ) ?? []
  const heads = await Promise.all(listed.map((scope) => readHead(scope, store)))
  const recent = listed.filter((_, i) => {
    const head = heads[i]
    return head !== undefined && continuity.now - head.at <= continuity.withinMs
  })
  return recent.length === 1 ? recent[0] : undefined
}

/** Lists a new implicit session under its system prompt, for finding it after a compaction. */
export async function listSession(
  identity: Identity,
  scope: string,
  systemKey: string,
  { store, memos }: { readonly store: Store; readonly memos: Memos },
): Promise<void> {
  // Listing is once a session on this process, not once a request.
  const memo = scope + '\u0000' + systemKey
  if (memos.listed.get(memo)) return
  const key = keys.sessionsOf(systemKey)
  const listed = parseRecord<string[]>(await store.getLatest(identity.tenant, key)) ?? []
  if (!listed.includes(scope)) {
    await store.setLatest(identity.tenant, key, JSON.stringify([...listed, scope].slice(-16)))
  }
  memos.listed.set(memo, true)
}

/**
 * An implicit session claims its new tool results in its tenant's index. When two replicas race
 * on the same first request, the index's first writer wins and the other joins its session.
 * True when another session won.
 */
export async function claimOwnership(
  session: SessionRef,
  toolKeys: readonly string[],
  store: Store,
): Promise<boolean> {
  if (session.identity.explicit) return false
  const scope = session.ensure()
  const winners = await store.putIfAbsent(
    session.identity.tenant,
    toolKeys.map((key) => [keys.ownerOfTool(key), scope] as const),
  )
  session.scope = winners[0] ?? scope
  return session.scope !== scope
}
