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
    { kind: 'write', names: ['edit_existing_file'], path: ['filepath'] },
    { kind: 'list', names: ['ls', 'List'] },
    { kind: 'glob', names: ['file_glob_search'] },
    { kind: 'grep', names: ['grep_search', 'Search'] },
    { kind: 'shell', names: ['run_terminal_command', 'Bash'], command: ['command'] },
  ],
  compaction: [{ role: 'system', pattern: /Previous conversation summary:\n\n/ }],
})
