import { defineProfile } from '../define-profile.js'

/** Roo Code (and legacy Kilo Code): research/agents.md §6. */
export const rooCode = defineProfile({
  name: 'roo-code',
  tools: [
    {
      kind: 'read',
      names: ['read_file'],
      path: ['path'],
      range: [{ offset: 'offset', limit: 'limit', base: 1 }],
    },
    {
      kind: 'edit',
      names: ['edit', 'search_replace', 'edit_file'],
      path: ['file_path', 'path'],
      edit: [{ old: 'old_string', new: 'new_string', all: 'replace_all' }],
    },
    { kind: 'edit', names: ['apply_diff'], path: ['path'], edit: [{ blocks: 'diff' }] },
    { kind: 'write', names: ['write_to_file'], path: ['path'], content: ['content'] },
    { kind: 'patch', names: ['apply_patch'], patch: ['patch'] },
    { kind: 'list', names: ['list_files'] },
    { kind: 'search', names: ['search_files', 'codebase_search'] },
    { kind: 'shell', names: ['execute_command'], command: ['command'] },
  ],
  envelopes: [{ pattern: /^File: [^\n]+\n(?<body>[\s\S]*?)\n*$/ }],
  success: [
    { pattern: /^\{"path":[\s\S]*"operation":"modified"/ },
    { pattern: /^\{"path":[\s\S]*"operation":"created"/, created: true },
  ],
  compaction: [{ role: 'user', pattern: /^## Conversation Summary\n/ }],
})
