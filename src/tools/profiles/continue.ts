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
  shellEnvelopes: [
    // renderContextItemsWithStatus: the terminal's status after its output.
    {
      any: /\n\[Status: [^\n]*\]$/,
      success: /^(?<body>[\s\S]*?)\n?\n\[Status: Command completed\]$/,
    },
  ],
  success: [
    // The edit is applied in the IDE; the answer names the file by its URI (CLI: by its path,
    // then its own diff). When the editor also formatted it, the content is not the call's.
    { pattern: /^Successfully edited [^\n]+(?:\nDiff:\n[\s\S]*)?$/ },
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
  ],
  compaction: [{ role: 'system', pattern: /Previous conversation summary:\n\n/ }],
})
