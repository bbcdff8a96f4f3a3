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
    {
      kind: 'write',
      names: ['edit', 'Edit', 'multiedit', 'MultiEdit', 'write', 'Write', 'write_file', 'write_to_file', 'edit_file', 'replace_in_file', 'create_new_file', 'single_find_and_replace', 'multi_edit', 'editor'],
      path: PATH_ARGS,
    },
    {
      kind: 'write',
      names: ['str_replace_editor', 'file_editor', 'text_editor', 'developer__text_editor'],
      path: ['path'],
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
  envelopes: [
    // opencode 2026: <path>/<type>/<content>, a footer with the file's length or the range.
    {
      pattern:
        /^<path>[^\n]*<\/path>\n<type>file<\/type>\n<content>\n(?<body>[\s\S]*?)\n\n\((?:End of file - total (?<total>\d+) lines|Showing lines (?<start>\d+)-(?<end>\d+) of (?<of>\d+)\.[^\n]*|[^\n]*)\)\n<\/content>$/,
    },
    { pattern: /^<path>[^\n]*<\/path>\n<type>directory<\/type>\n<entries>\n/, kind: 'list' },
    // opencode until early 2026: <file>, numbered 00001|.
    {
      pattern:
        /^<file>\n(?<body>[\s\S]*?)\n\n\((?:End of file - total (?<total>\d+) lines|[^\n]*)\)\n<\/file>$/,
    },
    // Qwen Code, when it shows part of a file. Its count of lines is not the file's (it counts
    // the empty string after a final newline), so only the range is taken.
    { pattern: /^Showing lines (?<start>\d+)-(?<end>\d+) of \d+ total lines\.\n\n---\n\n(?<body>[\s\S]*)$/ },
    // Claude Code: a reminder after the lines.
    { pattern: /^(?<body>[\s\S]*?)\n*<system-reminder>[\s\S]*<\/system-reminder>\s*$/ },
  ],
  agentStubs: [
    /^\[File .* unchanged since last read in this session/, // Qwen Code
    /^File unchanged since last read\./, // Claude Code
    /^\[Old tool result content cleared\]/, // Claude Code, opencode, Qwen Code
    /^\[Old inline media cleared/, // Qwen Code
    /^\[\[NOTE\] This file read has been removed/, // Cline
    /^\[DUPLICATE READ\]/, // Cline
    /^\[outdated - see the latest file content\]/, // Cline 4
  ],
})
