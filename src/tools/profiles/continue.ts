import { defineProfile } from '../define-profile.js'

/** Continue (IDE agent and the `cn` CLI): research/agents.md §8. */
export const continueDev = defineProfile({
  name: 'continue',
  tools: [
    { kind: 'read', names: ['read_file', 'Read'], path: ['filepath'] },
    {
      kind: 'read',
      names: ['read_file_range'],
      path: ['filepath'],
      range: [{ start: 'startLine', end: 'endLine' }],
    },
    {
      kind: 'edit',
      names: ['single_find_and_replace', 'Edit'],
      path: ['filepath', 'file_path'],
      edit: [{ old: 'old_string', new: 'new_string', all: 'replace_all' }],
    },
    {
      kind: 'edit',
      names: ['multi_edit', 'MultiEdit'],
      path: ['filepath', 'file_path'],
      edit: [{ list: 'edits', old: 'old_string', new: 'new_string', all: 'replace_all' }],
    },
    {
      kind: 'write',
      names: ['create_new_file', 'Write'],
      path: ['filepath'],
      content: ['contents', 'content'],
    },
    // A lazy edit ("// ... existing code ...") that an apply model merges: its result cannot be
    // told from the arguments, so the file is touched, never diffed.
    { kind: 'write', names: ['edit_existing_file'], path: ['filepath'] },
    { kind: 'list', names: ['ls', 'List'] },
    { kind: 'glob', names: ['file_glob_search'] },
    { kind: 'grep', names: ['grep_search', 'Search'] },
    { kind: 'shell', names: ['run_terminal_command', 'Bash'], command: ['command'] },
  ],
  envelopes: [
    // The `cn` CLI's Read (1.5.47, tools/readFile.ts): the whole file under a line naming it.
    { pattern: /^Content of [^\n]*:\n$/, kind: 'empty' },
    { pattern: /^Content of [^\n]*:\n(?<body>[\s\S]*)$/ },
  ],
  shellEnvelopes: [
    // renderContextItemsWithStatus: the terminal's status after its output.
    {
      any: /\n\[Status: [^\n]*\]$/,
      success: /^(?<body>[\s\S]*?)\n?\n\[Status: Command completed\]$/,
    },
    // The `cn` CLI's Bash: what the command wrote to stderr after its output, and an output cut
    // at its start (truncateOutputFromStart): neither is a file's lines.
    { any: /\nStderr: / },
    // A command that stopped printing for its `timeout` (1.5.47): what came, then this notice.
    { any: /(?:^|\n)\[Command timed out after \d+ seconds? of no output\]$/ },
    { any: /^\(previous (?:\d+ lines truncated|\d+ characters truncated|output truncated: )/ },
  ],
  success: [
    // The edit is applied in the IDE; the answer names the file by its URI (CLI: by its path,
    // then its own diff). When the editor also formatted it, the content is not the call's.
    // Its old text is found exactly, else trimmed, case-insensitive or whitespace-ignored
    // (core/edit/searchAndReplace/findSearchMatch.ts): only a replay on the file as read says what.
    { pattern: /^Successfully edited [^\n]+(?:\nDiff:\n[\s\S]*)?$/, inexact: true },
    {
      pattern: /^Along with your edits, the editor applied the following auto-formatting/,
      opaque: true,
    },
    { pattern: /^File created successfuly$/, created: true }, // sic, in createNewFile.ts
    { pattern: /^Successfully created file: [^\n]+$/, created: true }, // CLI
    { pattern: /^Successfully wrote to file: [^\n]+(?:\nDiff:\n[\s\S]*)?$/ }, // CLI
  ],
  failures: [
    // callToolById: any tool's failure and its arguments' rejection.
    /^\w+ failed with the message: /,
    /^\w+ failed because the arguments were invalid/,
    // The `cn` CLI (stream/streamChatResponse.helpers.ts): a tool that threw or was refused.
    /^Error (?:executing tool|checking permissions for) \w+: /,
    // The `cn` CLI's Edit and MultiEdit (1.5.47): their own errors, as thrown (ContinueError).
    /^Edit at index \d+: /,
    /^(?:edit at index \d+: )?(?:string (?:old|new)_string is required|old_string and new_string must be different|replace_all must be a valid boolean)/,
    /^You must use the \w+ tool to read [^\n]* before editing it\.$/,
    /^file_path is required$/,
    // A file the CLI keeps from the model (config.json, .env, private/…), refused before the tool
    // runs, without the `Error executing tool` before it (1.5.47).
    /^Reading or Editing [^\n]* is not allowed because it is a security concern\./,
  ],
  compaction: [
    { role: 'system', pattern: /Previous conversation summary:\n\n/ },
    // The `cn` CLI (1.5.47) replaces the history with its model's summary alone: a history
    // that opens with the assistant's words, in a request with cn's own tools.
    { role: 'assistant', pattern: /\S/, first: true, offered: ['Checklist', 'CheckBackgroundJob'] },
  ],
})
