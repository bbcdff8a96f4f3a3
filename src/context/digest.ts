import type { Hash } from 'node:crypto'

/** Texts longer than this many UTF-16 units are fed to a hash in slices of it. */
export const TEXT_SLICE = 1 << 16

/**
 * Feeds `text` to `hash` as UTF-8, a slice at a time: node first encodes a long string into one
 * new buffer, which for megabytes takes 4–5 times as long as slices of it. No slice ends inside
 * a surrogate pair, so the digest is the whole text's.
 */
export function updateText(hash: Hash, text: string): Hash {
  if (text.length <= TEXT_SLICE) return hash.update(text)
  for (let at = 0; at < text.length;) {
    const end = sliceEnd(text, at, TEXT_SLICE)
    hash.update(text.slice(at, end))
    at = end
  }
  return hash
}

/** Where a slice of at most `size` units from `at` ends: never between a pair's two halves. */
export function sliceEnd(text: string, at: number, size: number): number {
  const end = Math.min(text.length, at + size)
  const last = text.charCodeAt(end - 1)
  return end < text.length && last >= 0xd800 && last <= 0xdbff ? end - 1 : end
}
