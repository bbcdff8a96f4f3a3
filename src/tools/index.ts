export { classifyCall, type Classified } from './classify.js'
export { defineProfile, type Profile, type ToolRule } from './define-profile.js'
export { shownLines, type ShownLines } from './read-text.js'
export { generic } from './profiles/generic.js'
