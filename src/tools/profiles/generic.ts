import { defineProfile } from '../define-profile.js'

const PATH_ARGS = ['file_path', 'filePath', 'path', 'filepath', 'absolutePath', 'absolute_path', 'target_file']

/** Tool names and argument shapes shared by the common coding agents (see research/agents.md). */
export const generic = defineProfile({
  name: 'generic',
  tools: [
    {
      kind: 'read',
      names: ['read', 'read_file', 'Read', 'view', 'read_file_range', 'cat'],
      path: PATH_ARGS,
      range: [
        { offset: 'offset', limit: 'limit', base: 'schema' },
        { start: 'start_line', end: 'end_line' },
        { start: 'startLine', end: 'endLine' },
        { pair: 'view_range' },
      ],
    },
    {
      kind: 'read',
      names: ['str_replace_editor', 'file_editor', 'text_editor', 'developer__text_editor'],
      when: { arg: 'command', equals: 'view' },
      path: ['path'],
      range: [{ pair: 'view_range' }],
    },
    { kind: 'list', names: ['list', 'ls', 'LS', 'list_dir', 'list_files', 'list_directory', 'List'] },
    { kind: 'glob', names: ['glob', 'Glob', 'file_glob_search', 'find_files'] },
    { kind: 'grep', names: ['grep', 'Grep', 'grep_search', 'grep_files', 'rg'] },
    { kind: 'search', names: ['search', 'Search', 'search_files', 'codebase_search', 'search_codebase'] },
  ],
  failures: [
    /^(error|file not found|cannot|could not|failed|no such file|offset .* out of range)/i,
    /^<tool_use_error>/,
  ],
})
