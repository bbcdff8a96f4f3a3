import type { Memo } from '../memo.js'

/**
 * What the process knows of a session's counter after a claim: the number after the highest it
 * was given, so that its next new results are rendered with the numbers that follow and claimed
 * in the batch that writes them (see renderFresh). After a wrong guess it is forgotten, so the
 * next request claims first: a session whose requests alternate between processes guesses
 * wrong at most every other request.
 */
export function learnIds(
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
