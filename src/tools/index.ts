export { classifyCall, searchReplaceBlocks, type Classified, type Replacement } from './classify.js'
export {
  defineProfile,
  mergeProfiles,
  type CompactionMarker,
  type JsonResult,
  type Profile,
  type ShellEnvelope,
  type ToolRule,
  type Trailer,
} from './define-profile.js'
export { parsePatch, type PatchFile, type PatchHunk } from './patch.js'
export { shownLines, type ShownLines } from './read-text.js'
export { commandArgv, shellCall } from './shell.js'
export { shellOutput } from './shell-output.js'
export { defaultProfile, profiles } from './profiles/index.js'
export { splitTrailer, type Split } from './trailer.js'
