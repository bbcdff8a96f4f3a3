import type { Json } from '../../pipeline/door.js'

/**
 * The OpenAI API refuses a `reasoning` item that is not followed by the item it preceded in its
 * answer (`Item 'rs_…' of type 'reasoning' was provided without its required following item`),
 * on every later request of the conversation. The proxy makes such items when a recall round's
 * answer reached the client (its reasoning streams as it comes) and what followed it did not:
 * the round after it failed, or the client stopped in the middle (Codex keeps the reasoning it
 * got). A reasoning item whose next item is another reasoning item, or no answer's item at all
 * (a user message, a tool's output), is such a one: it goes upstream as nothing. The same items
 * give the same result on every later request, so the bytes sent stay the same. A reasoning item
 * that ends the request is left: what follows it is not known yet (the door holds it back, so
 * the next request judges it again, on the fast path as on the full one).
 */
export function dropUnfollowedReasoning(perItem: Json[][]): number {
  let dropped = 0
  for (let k = 0; k < perItem.length; k++) {
    const list = perItem[k]!
    for (let j = 0; j < list.length; j++) {
      if (list[j]!.type !== 'reasoning') continue
      const next = list[j + 1] ?? firstAfter(perItem, k)
      if (next === undefined || follows(next)) continue
      list.splice(j, 1)
      j--
      dropped++
    }
  }
  return dropped
}

function firstAfter(perItem: readonly Json[][], k: number): Json | undefined {
  for (let i = k + 1; i < perItem.length; i++) if (perItem[i]!.length > 0) return perItem[i]![0]
  return undefined
}

/** An item of the model's answer other than reasoning: what a reasoning item may precede. */
function follows(item: Json): boolean {
  if (item.type === 'reasoning') return false
  if (item.type === 'message' || item.type === undefined) return item.role === 'assistant'
  return typeof item.type === 'string' && !item.type.endsWith('_output')
}
