import { randomUUID } from 'node:crypto'
import { keys, parseRecord } from './records.js'
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

/**
 * Finds the session a request belongs to: its explicit id; else the session that owns any tool
 * result, answer or summary the request carries (`owners`: tenant keys, implicit identity);
 * else, right after a compaction (a recognised summary and nothing else known), the one session
 * of the tenant with the same system prompt that was active recently, when there is exactly
 * one; else none yet.
 */
export async function findSession(
  owners: readonly string[],
  identity: Identity,
  store: Store,
  continuity: Continuity,
): Promise<SessionRef> {
  if (identity.explicit) {
    return new SessionRef(identity, explicitScope({ ...identity, explicit: identity.explicit }))
  }
  const found = owners.length > 0 ? await store.get(identity.tenant, owners) : []
  const owner = found.find((value) => value !== undefined)
  if (owner !== undefined || continuity.summaries.length === 0) {
    return new SessionRef(identity, owner)
  }
  return new SessionRef(identity, await continuedSession(identity, store, continuity))
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
