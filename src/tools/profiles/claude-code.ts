import { defineProfile } from '../define-profile.js'

/** Claude Code's tools as routers expose them on chat completions: research/agents.md §12. */
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
    { kind: 'glob', names: ['Glob'] },
    { kind: 'grep', names: ['Grep'] },
    { kind: 'list', names: ['LS'] },
    { kind: 'shell', names: ['Bash'], command: ['command'] },
  ],
  // A reminder the CLI appends after the lines of a read.
  envelopes: [{ pattern: /^(?<body>[\s\S]*?)\n*<system-reminder>[\s\S]*<\/system-reminder>\s*$/ }],
  success: [
    {
      pattern:
        /^The file [^\n]+ has been updated\. Here's the result of running `cat -n` on a snippet of the edited file:\n/,
    },
    { pattern: /^File created successfully at: [^\n]+$/, created: true },
    { pattern: /^Applied \d+ edits? to [^\n]+/ },
  ],
  failures: [/^<tool_use_error>/, /^File does not exist\./],
  agentStubs: [/^File unchanged since last read\./, /^\[Old tool result content cleared\]/],
  compaction: [
    {
      role: 'user',
      pattern:
        /^This session is being continued from a previous conversation that ran out of context\./,
    },
  ],
})
