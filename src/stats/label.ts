import { isRecord } from '../wire/chat.js'
import { REMINDER } from '../wire/reminders.js'

/** What a person recognises a session by: its agent, model and first words. */
export interface SessionLabel {
  readonly agent?: string
  readonly model?: string
  readonly title?: string
}

/** Characters of the first user message a label keeps. */
const TITLE_CHARS = 60

/**
 * A session's label from a request: the agent from its user-agent (`claude-cli/2.1.332`), the
 * model it asks for, and the first words of its first user message (text parts, the context an
 * agent sends as the user's before the task left out). Any wire format: the items are `messages`
 * or `input`.
 */
export function sessionLabel(request: unknown, userAgent: string | null): SessionLabel {
  const body = isRecord(request) ? request : {}
  const items = Array.isArray(body.messages)
    ? body.messages
    : Array.isArray(body.input)
      ? body.input
      : []
  const first = items.find(
    (item) => isRecord(item) && item.role === 'user' && userText(item.content),
  )
  const title = first && isRecord(first) ? userText(first.content) : ''
  const agent = userAgent?.trim().split(/\s+/)[0]
  return {
    ...(agent ? { agent: agent.slice(0, 60) } : {}),
    ...(typeof body.model === 'string' && body.model ? { model: body.model.slice(0, 60) } : {}),
    ...(title ? { title: shorten(title) } : {}),
  }
}

function userText(content: unknown): string {
  if (typeof content === 'string') return content.trim()
  if (!Array.isArray(content)) return ''
  return content
    .flatMap((part) => (isRecord(part) && typeof part.text === 'string' ? [part.text.trim()] : []))
    .filter((text) => text !== '' && !AGENT_CONTEXT.some((opening) => text.startsWith(opening)))
    .join(' ')
}

/**
 * How an agent's own context opens where it stands as a user message or part: Claude Code's and
 * Qwen Code's reminders, Codex's environment and AGENTS.md (its first user messages, before the
 * task), Kilo's and Cline's workspace details (a part after the task), none of them the words a
 * person recognises a session by.
 */
const AGENT_CONTEXT = [
  REMINDER.open,
  '<environment_details>',
  '<environment_context>',
  '<user_instructions>',
  '# AGENTS.md instructions for ',
]

function shorten(text: string): string {
  const flat = text.replace(/\s+/g, ' ')
  return flat.length <= TITLE_CHARS ? flat : flat.slice(0, TITLE_CHARS - 1).trimEnd() + '…'
}
