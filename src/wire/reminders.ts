/**
 * The blocks Claude Code and Qwen Code put into a conversation of their own accord (tokens left,
 * the date, todo nudges, a file's changes): the agent's context, never the user's words or a
 * tool's output.
 */
export const REMINDER = { open: '<system-reminder>', close: '</system-reminder>' } as const

const REMINDER_ONLY = new RegExp(
  `^\\s*${REMINDER.open}[\\s\\S]*${REMINDER.close.replace('/', '\\/')}\\s*$`,
)

/** Whether a text is reminder blocks alone. */
export function isReminderOnly(text: string): boolean {
  return REMINDER_ONLY.test(text)
}
