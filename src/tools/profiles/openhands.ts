import { defineProfile } from '../define-profile.js'

const EDITORS = ['str_replace_editor', 'file_editor']

// openhands-aci editor.py (`_make_output`): the numbered lines follow this line.
const CAT_N = String.raw`Here's the result of running \`cat -n\` on [^\n]+:\n`
// view() with a range past the end: a note before the lines (V1, this fixture) or after them.
const ONLY = String.raw`NOTE: We only show up to (?<total>\d+) since there(?:'re|'s) only \d+ lines in this file\.?`

/**
 * OpenHands V0's CodeAct skills, called as Python in `execute_ipython_cell` (agent_skills'
 * file_ops): the code is one call of a skill with literal arguments.
 */
const SKILLS = ['execute_ipython_cell']
const skill = (call: string, params: readonly string[]) => ({ arg: 'code', call, params })

// open_file's window: a header with the file's length, then the lines `N|text` between markers.
const WINDOW_HEAD = String.raw`\[File: [^\n]+ \((?<total>\d+) lines total\)\]\n(?:\(this is the beginning of the file\)|\(\d+ more lines above\))\n`
const WINDOW_TAIL = String.raw`\n(?:\(this is the end of the file\)|\(\d+ more lines below\))(?:\n\[Use \`scroll_down\` to view the next 100 lines of the file!\])?`
// The IPython runtime's lines after any cell's output (its directory, its interpreter).
const JUPYTER = String.raw`(?:\n\[Jupyter [^\n]*\])*\s*$`

/** OpenHands V0 (str_replace_editor, execute_bash) and V1 (file_editor, terminal): research/agents.md §9. */
export const openHands = defineProfile({
  name: 'openhands',
  tools: [
    {
      kind: 'read',
      names: EDITORS,
      when: { arg: 'command', equals: ['view'] },
      path: ['path'],
      range: [{ pair: 'view_range' }],
    },
    {
      kind: 'edit',
      names: EDITORS,
      when: { arg: 'command', equals: ['str_replace'] },
      path: ['path'],
      edit: [{ old: 'old_str', new: 'new_str' }],
    },
    {
      kind: 'write',
      names: EDITORS,
      when: { arg: 'command', equals: ['create'] },
      path: ['path'],
      content: ['file_text'],
    },
    // insert: new_str's lines go after line insert_line (0 = the top).
    {
      kind: 'edit',
      names: EDITORS,
      when: { arg: 'command', equals: ['insert'] },
      path: ['path'],
      edit: [{ insert: 'new_str', line: 'insert_line', base: 'after' }],
    },
    {
      kind: 'write',
      names: EDITORS,
      when: { arg: 'command', equals: ['undo_edit'] },
      path: ['path'],
    },
    { kind: 'patch', names: ['apply_patch'], patch: ['patch', 'input'] },
    { kind: 'shell', names: ['execute_bash', 'terminal'], command: ['command'] },
    // The window's own numbers say which lines it shows (line_number centres it).
    {
      kind: 'read',
      names: SKILLS,
      code: skill('open_file', ['path', 'line_number', 'context_lines']),
      path: ['path'],
    },
    // These skills replace whole lines around what they were given, and may match it loosely:
    // their change is not derived from the call (see the opaque success below).
    {
      kind: 'write',
      names: SKILLS,
      code: skill('edit_file_by_replace', ['file_name', 'to_replace', 'new_content']),
      path: ['file_name'],
    },
    {
      kind: 'write',
      names: SKILLS,
      code: skill('insert_content_at_line', ['file_name', 'line_number', 'content']),
      path: ['file_name'],
    },
    {
      kind: 'write',
      names: SKILLS,
      code: skill('append_file', ['file_name', 'content']),
      path: ['file_name'],
    },
    { kind: 'write', names: SKILLS, code: skill('create_file', ['filename']), path: ['filename'] },
    { kind: 'grep', names: SKILLS, code: skill('search_dir', ['search_term', 'dir_path']) },
    { kind: 'grep', names: SKILLS, code: skill('search_file', ['search_term', 'file_path']) },
    { kind: 'glob', names: SKILLS, code: skill('find_file', ['file_name', 'dir_path']) },
    { kind: 'glob', names: ['glob'] },
    { kind: 'grep', names: ['grep'] },
  ],
  envelopes: [
    {
      pattern:
        /^Here's the files and directories up to \d+ levels deep in [^\n]+, excluding hidden items:\n/,
      kind: 'list',
    },
    // maybe_truncate: the notice is put after the cut text, before the lines are numbered.
    {
      pattern: new RegExp(
        String.raw`^(?:${ONLY}\n)?${CAT_N}(?<body>[\s\S]*?)<response clipped><NOTE>[\s\S]*?</NOTE>\s*$`,
      ),
      cut: true,
    },
    { pattern: new RegExp(String.raw`^${ONLY}\n${CAT_N}(?<body>[\s\S]*?)\n*$`) },
    { pattern: new RegExp(String.raw`^${CAT_N}(?<body>[\s\S]*?)\n+${ONLY}\n*$`) },
    { pattern: new RegExp(String.raw`^${CAT_N}(?<body>[\s\S]*?)\n*$`) },
    { pattern: new RegExp(String.raw`^${WINDOW_HEAD}(?<body>[\s\S]*?)${WINDOW_TAIL}${JUPYTER}`) },
  ],
  shellEnvelopes: [
    // Every observation may lose its middle: then it is no file's lines.
    { any: /\n\[\.\.\. Observation truncated due to length \.\.\.\]\n/ },
    // bash session and runtime: the exit code and working directory after the output.
    {
      any: /(?:^|\n)\[Command finished with exit code -?\d+\]$/,
      success:
        /^(?<body>[\s\S]*?)\n?\[The command completed with exit code 0\.\]\n\[Current working directory: [^\n]*\]\n(?:\[Python interpreter: [^\n]*\]\n)?\[Command finished with exit code 0\]$/,
    },
  ],
  success: [
    // str_replace and insert; lint results may follow the snippet.
    { pattern: /^The file [^\n]+ has been edited\. Here's the result of running `cat -n`/ },
    { pattern: /^File created successfully at: [^\n]+$/, created: true },
    // The skills' edits: the file's window after the change.
    { pattern: /^\[File: [^\n]+ \(\d+ lines total after edit\)\]\n/, opaque: true },
    {
      pattern: /^\[File: [^\n]+ \(\d+ lines total\)\]\n[\s\S]*\n\[File [^\n]+ created\.\]/,
      opaque: true,
    },
  ],
  failures: [
    /^ERROR:/, // V0: action_execution_server
    /^\[An error occurred during execution\.\]\n/, // V1: the tool's error observation
    /^Invalid `path` parameter/,
    // The skills' edits that changed nothing (a lint error undoes the edit).
    /^\[No exact match found in /,
    /^\[Your proposed edit has introduced new syntax error\(s\)/,
  ],
  compaction: [{ role: 'user', pattern: /^USER_CONTEXT:/ }],
})
