import { mergeProfiles } from '../define-profile.js'
import { claudeCode } from './claude-code.js'
import { clineClassic, clineV4 } from './cline.js'
import { codex } from './codex.js'
import { continueDev } from './continue.js'
import { crush } from './crush.js'
import { goose } from './goose.js'
import { miniSweAgent } from './mini-swe-agent.js'
import { opencode } from './opencode.js'
import { openHands } from './openhands.js'
import { qwenCode } from './qwen-code.js'
import { rooCode } from './roo-code.js'

/** Every agent's profile, in the order their rules are tried (more specific shapes first). */
export const profiles = [
  opencode,
  claudeCode,
  qwenCode,
  clineClassic,
  clineV4,
  rooCode,
  crush,
  openHands,
  continueDev,
  goose,
  codex,
  miniSweAgent,
]

/** The table the proxy uses: all profiles merged; an unknown tool is "other" (id + cap). */
export const defaultProfile = mergeProfiles('all agents', profiles)

export {
  claudeCode,
  clineClassic,
  clineV4,
  codex,
  continueDev,
  crush,
  goose,
  miniSweAgent,
  opencode,
  openHands,
  qwenCode,
  rooCode,
}
