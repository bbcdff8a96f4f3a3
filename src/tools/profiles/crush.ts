import { defineProfile } from '../define-profile.js'

/** Crush (charmbracelet): research/agents.md §11. */
export const crush = defineProfile({
  name: 'crush',
  tools: [
    {
      kind: 'read',
      names: ['view'],
      path: ['file_path'],
      range: [{ offset: 'offset', limit: 'limit', base: 'schema' }],
    },
    {
      kind: 'edit',
      names: ['edit'],
      path: ['file_path'],
      edit: [{ old: 'old_string', new: 'new_string', all: 'replace_all' }],
    },
    {
      kind: 'edit',
      names: ['multiedit'],
      path: ['file_path'],
      edit: [{ list: 'edits', old: 'old_string', new: 'new_string', all: 'replace_all' }],
    },
    { kind: 'write', names: ['write'], path: ['file_path'], content: ['content'] },
    { kind: 'list', names: ['ls'] },
    { kind: 'glob', names: ['glob'] },
    { kind: 'grep', names: ['grep'] },
    { kind: 'shell', names: ['bash'], command: ['command'] },
  ],
  envelopes: [
    { pattern: /^<file>\n(?<body>[\s\S]*?)\n*(?:\(File has more lines[^\n]*\)\n)?<\/file>\s*$/ },
  ],
  compaction: [{ role: 'user', pattern: /^## Current State\n[\s\S]*\n## Exact Next Steps\n/ }],
})
