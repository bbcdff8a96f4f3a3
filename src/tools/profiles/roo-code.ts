import { defineProfile } from '../define-profile.js'

// DiffViewProvider.pushToolWriteResult: JSON.stringify({path, operation, notice, user_edits?,
// problems?}), in that order. A JSON string's inside:
const STRING = String.raw`"(?:[^"\\\n]|\\.)*"`
const WRITE_RESULT = (operation: string, rest: string) =>
  new RegExp(
    String.raw`^\{"path":${STRING},"operation":"${operation}","notice":${STRING}${rest}\}$`,
  )

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
    { kind: 'shell', names: ['execute_command'], command: ['command'], dir: ['cwd'] },
  ],
  envelopes: [
    // ReadFileTool: an empty file splits into one empty line, or says so.
    { pattern: /^File: [^\n]+\n(?:1 \| |Note: File is empty)\n*$/, kind: 'empty' },
    // A window shorter than the file: the status goes before the lines, tab-indented.
    {
      pattern:
        /^File: [^\n]+\nIMPORTANT: File content truncated\.\n\tStatus: Showing lines (?<start>\d+)-(?<end>\d+) of (?<total>\d+) total lines\.\n(?:\t[^\n]*\n)*?\t\n\t(?<body>[\s\S]*?)\n*$/,
    },
    { pattern: /^File: [^\n]+\n(?<body>[\s\S]*?)\n*$/ },
  ],
  shellEnvelopes: [
    {
      any: /^Command executed in (?:terminal within working directory )?'[^\n]*'\. /,
      success:
        /^Command executed in terminal within working directory '[^\n]*'\. Exit code: 0\nOutput:\n(?<body>[\s\S]*)$/,
    },
  ],
  success: [
    {
      pattern: WRITE_RESULT('modified', String.raw`(?:,"problems":"(?<note>(?:[^"\\\n]|\\.)*)")?`),
      noteJson: true,
    },
    {
      pattern: WRITE_RESULT('created', String.raw`(?:,"problems":"(?<note>(?:[^"\\\n]|\\.)*)")?`),
      noteJson: true,
      created: true,
    },
    // The user edited the content before it was saved: what the file is now is not known.
    {
      pattern: WRITE_RESULT('(?:created|modified)', String.raw`,"user_edits":[\s\S]*`),
      opaque: true,
    },
    // ApplyPatchTool: a deleted file.
    { pattern: /^Successfully deleted [^\n]+$/ },
  ],
  failures: [
    // ReadFileTool: its errors and notices follow the header.
    /^File: [^\n]+\n(?:Error: |Binary file )/,
  ],
  compaction: [{ role: 'user', pattern: /^## Conversation Summary\n/ }],
})
