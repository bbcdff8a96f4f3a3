import { REMINDER } from '../../wire/reminders.js'
import { defineProfile } from '../define-profile.js'

/** Edit's and Write's answer for a file that was there (2.1.x): all but what follows it. */
const UPDATED = String.raw`^The file [^\n]+ has been updated(?: successfully\.|\. All occurrences were successfully replaced\.)`

/**
 * Claude Code's tools as routers expose them on chat completions: research/agents.md §12, and
 * test/fixtures/agents/claude-code (2.1.88 source; verbatim 1.0.51 results).
 */
export const claudeCode = defineProfile({
  name: 'claude-code',
  tools: [
    {
      kind: 'read',
      names: ['Read'],
      path: ['file_path'],
      range: [{ offset: 'offset', limit: 'limit', base: 1 }],
    },
    {
      kind: 'edit',
      names: ['Edit'],
      path: ['file_path'],
      edit: [{ old: 'old_string', new: 'new_string', all: 'replace_all' }],
    },
    {
      kind: 'edit',
      names: ['MultiEdit'],
      path: ['file_path'],
      edit: [{ list: 'edits', old: 'old_string', new: 'new_string', all: 'replace_all' }],
    },
    { kind: 'write', names: ['Write'], path: ['file_path'], content: ['content'] },
    // A notebook is JSON the cell edit does not show: the file is touched, never diffed.
    { kind: 'write', names: ['NotebookEdit'], path: ['notebook_path'] },
    { kind: 'glob', names: ['Glob'] },
    { kind: 'grep', names: ['Grep'] },
    { kind: 'list', names: ['LS'] },
    { kind: 'shell', names: ['Bash'], command: ['command'] },
  ],
  // The CLI appends reminders after any tool's output on most models (tokens left, todo nudges,
  // a file's changes): volatile, so compared without, and kept after the rendering.
  trailers: [REMINDER],
  envelopes: [
    // FileReadTool on a notebook (.ipynb, 2.1.332): its cells as `<cell id="…">` blocks (outputs
    // after them, images as parts of their own), never the file's lines: shown as it came.
    { pattern: /^<cell id="[^"\n]*">/, kind: 'other' },
    // FileReadTool: an empty file is this reminder alone.
    {
      pattern:
        /^<system-reminder>Warning: the file exists but the contents are empty\.<\/system-reminder>\s*$/,
      kind: 'empty',
    },
  ],
  // Bash answers with the output alone. An output past the tool's limit is saved to a file and
  // the model sees `<persisted-output>`: `Output too large (198.1KB). Full output saved to: PATH`,
  // `Preview (first 2KB):`, the head, `...` (2.1.332); or its start and end, or a
  // `<truncated-output>` when it could not be saved. Never a file's lines.
  // A command that failed answers `Exit code N` first, then what it printed (2.1.332): never a
  // file's lines, whatever the command. A command that left the project has the CLI's notice
  // after its output (`Shell cwd was reset to DIR`; `Shell cwd recovered to …` when the folder
  // went away): the output is what comes before it.
  shellEnvelopes: [
    { any: /^Exit code -?\d+(?:\n|$)/ },
    { any: /^<(?:persisted|truncated)-output>\n/ },
    {
      any: /(?:^|\n)Shell cwd (?:was reset|recovered) to [^\n]*$/,
      success: /^(?<body>[\s\S]*?)\n?Shell cwd (?:was reset|recovered) to [^\n]*$/,
    },
  ],
  success: [
    // 2.1.88 answers without a snippet; 1.0.x with a `cat -n` snippet of the new text; 2.1.332
    // adds a note that the model need not read the file back.
    {
      pattern: new RegExp(
        UPDATED +
          String.raw`(?: \(file state is current in your context — no need to Read it back\))?\s*$`,
      ),
    },
    // The file had changed on disk since the model's last Read (2.1.332 and 2.1.337 alike): the
    // diff comes from the file, the CLI's note stays after it (the model has not seen it all).
    {
      pattern: new RegExp(
        UPDATED +
          String.raw`(?<note> \(note: the file had been modified on disk since you last read it\b[^\n]*\))\s*$`,
      ),
      staleView: true,
    },
    {
      pattern:
        /^The file [^\n]+ has been updated\. Here's the result of running `cat -n` on a snippet of the edited file:\n/,
    },
    {
      pattern: /^File created successfully at: [^\n]+?\s*$/,
      created: true,
    },
    { pattern: /^Applied \d+ edits? to [^\n]+:\n/ },
    // NotebookEditTool.
    { pattern: /^(?:Updated|Inserted) cell [^\n]+ with / },
    { pattern: /^Deleted cell [^\n]+$/ },
  ],
  failures: [
    /^<tool_use_error>/,
    // A read past the end: the CLI answers with a reminder alone.
    /^<system-reminder>Warning: the file exists but is shorter than the provided offset\b/,
    /^File does not exist\./,
    // A file past the Read's size or token limit (2.1.332: `File content (704KB) exceeds maximum
    // allowed size (256KB). Use offset and limit…`; 2.1.88: `(N tokens) … tokens (25000)`).
    /^File content \([^)\n]*\) exceeds maximum allowed (?:size|tokens)\b/,
    // Errors thrown from Node's fs reach the model as their message (a directory: EISDIR).
    /^E[A-Z]{3,}: [^\n]*, [a-z]+ '/,
  ],
  agentStubs: [/^File unchanged since last read\./, /^\[Old tool result content cleared\]/],
  compaction: [
    {
      role: 'user',
      pattern:
        /^This session is being continued from a previous conversation that ran out of context\./,
    },
  ],
  // Claude Code 2.1.332's compaction prompt, a text block after the newest results.
  summarising: [
    /CRITICAL: Respond with TEXT ONLY\. Do NOT call any tools\.[\s\S]*Your task is to create a detailed summary of the conversation so far/,
  ],
})
