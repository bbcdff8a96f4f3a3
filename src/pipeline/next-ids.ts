import type { Memo } from '../memo.js'
import { sameIds, type Store } from '../store/store.js'

/** What a caller renders with the ids it is given: at least the entries to write. */
export interface WithEntries {
  readonly entries: readonly (readonly [key: string, value: string])[]
}

/**
 * Claims the ids of `claims` and writes what `render` makes with them: in one store call
 * (claimThenPut) when the process knows the session's next number, rendering with the numbers
 * that follow; else, or when that guess was wrong (another process took numbers meanwhile), the
 * claim first, then the rendering with the ids it gave, then the write. `alongside` (a write of
 * its own) starts with the first write, so a store committing a turn's writes together takes
 * both at once. Returns the rendering written and the entries' winners (see putIfAbsent).
 */
export async function claimAndWrite<R extends WithEntries>(
  store: Store,
  nextIds: Memo<number>,
  scope: string,
  claims: readonly string[],
  render: (ids: readonly number[]) => Promise<R>,
  alongside?: () => Promise<unknown>,
): Promise<{ rendered: R; winners: string[] }> {
  let along: Promise<unknown> | undefined
  const withAlong = <T>(write: Promise<T>): Promise<T> => {
    along ??= alongside?.() ?? Promise.resolve()
    return Promise.all([write, along]).then(([out]) => out)
  }
  const guess = nextIds.get(scope)
  let rendered: R | undefined
  let ids: number[]
  if (guess !== undefined && claims.length > 0) {
    const expected = claims.map((_, i) => guess + i)
    rendered = await render(expected)
    const claimed = await withAlong(store.claimThenPut(scope, claims, expected, rendered.entries))
    const right = sameIds(claimed.ids, expected)
    learnIds(nextIds, scope, claimed.ids, right)
    if (claimed.winners) return { rendered, winners: claimed.winners }
    ids = claimed.ids
    if (!right) rendered = undefined
  } else {
    ids = await store.claimIds(scope, claims)
    learnIds(nextIds, scope, ids)
  }
  rendered ??= await render(ids)
  return { rendered, winners: await withAlong(store.putIfAbsent(scope, rendered.entries)) }
}

/**
 * What the process knows of a session's counter after a claim: the number after the highest it
 * was given, so that its next new results are rendered with the numbers that follow and claimed
 * in the batch that writes them. After a wrong guess it is forgotten, so the
 * next request claims first: a session whose requests alternate between processes guesses
 * wrong at most every other request.
 */
function learnIds(
  nextIds: Memo<number>,
  scope: string,
  ids: readonly number[],
  right = true,
): void {
  if (!right) {
    nextIds.delete(scope)
    return
  }
  let next = nextIds.get(scope) ?? 0
  for (const id of ids) if (id >= next) next = id + 1
  if (next > 0) nextIds.set(scope, next)
}
