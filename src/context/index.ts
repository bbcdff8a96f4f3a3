export type * from './types.js'
export { TEXT_NAMES } from './types.js'
export { formatId, parseId } from './ids.js'
export { capText } from './cap.js'
export { readBracket, shortSha } from './brackets.js'
export {
  DedupeTable,
  hashLines,
  legacyLineHashes,
  sha256Hex,
  sortedKeyJson,
  type DedupeSnapshot,
  type Entry,
  type ReadEntry,
  type ListingEntry,
  type TouchEntry,
} from './dedupe-table.js'
export { renderEdit, renderPatch, unifiedHunks } from './edit-diff.js'
export { renderRecall, type RecallRequest } from './recall.js'
export { renderCompactionTable, type TableRead } from './compaction-table.js'
export {
  renderResult,
  renderRewritten,
  type FullRendering,
  type Rendering,
  type RenderInput,
} from './render.js'
export { countChars, countLines, fill, splitLines } from './text.js'
export { sliceEnd, TEXT_SLICE, updateText } from './digest.js'
