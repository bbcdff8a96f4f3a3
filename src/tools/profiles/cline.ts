import { defineProfile } from '../define-profile.js'

const PATH = ['path', 'absolutePath']

// Every classic result starts with the call's description: `[read_file for 'src/a.ts'] Result:`.
const HEADER = String.raw`(?:\[\w+ for '[^\n]*'\] Result:\n)?`
const re = (source: string) => new RegExp(source)

/** Cline classic (v3.89): every result starts `[tool for 'x'] Result:`. research/agents.md §5a. */
export const clineClassic = defineProfile({
  name: 'cline-classic',
  tools: [
    {
      kind: 'read',
      names: ['read_file'],
      path: PATH,
      range: [{ start: 'start_line', end: 'end_line' }],
    },
    { kind: 'edit', names: ['replace_in_file'], path: PATH, edit: [{ blocks: 'diff' }] },
    { kind: 'write', names: ['write_to_file'], path: PATH, content: ['content'] },
    // Cline 4 answers the same call (and Codex's) in JSON; classic and Codex in plain text.
    {
      kind: 'patch',
      names: ['apply_patch'],
      patch: ['input'],
      json: { text: 'result', ok: 'success', maybe: true },
    },
    { kind: 'search', names: ['search_files'] },
    { kind: 'list', names: ['list_files'] },
    // The first rule named `execute_command` decides for Roo Code too, whose `cwd` it is.
    { kind: 'shell', names: ['execute_command'], command: ['command'], dir: ['cwd'] },
  ],
  envelopes: [
    // ReadFileToolHandler: a repeated read puts a notice line before the content it returns.
    {
      pattern:
        /^\[read_file for '[^\n]*'\] Result:\n(?:\[(?:File already read|DUPLICATE READ)\] [^\n]*\n)?(?<body>[\s\S]*?)(?:\n\n\((?:File has (?<total>\d+) lines total|Showing lines (?<start>\d+)-(?<end>\d+) of (?<of>\d+) total\.[^\n]*)\.?\))?$/,
    },
  ],
  shellEnvelopes: [
    {
      any: /^(?:\[execute_command for '[^\n]*'\] Result:\n)?Command /,
      // The output of a long run is cut and saved elsewhere: then it is not the file's lines.
      success:
        /^(?:\[execute_command for '[^\n]*'\] Result:\n)?Command executed successfully \(exit code 0\)\.\nOutput:\n(?![\s\S]*\nFull output saved to: [^\n]*$)(?<body>[\s\S]*)$/,
    },
  ],
  success: [
    // DiffViewProvider: the answer echoes the whole saved file (formatting included), then the
    // new problems. The diff says the same in a fraction of it.
    {
      pattern: re(
        String.raw`^${HEADER}The content was successfully saved to [^\n]*?\.(?:\n\n[\s\S]*?)?\n\nHere is the full, updated content of the file that was saved:\n\n<final_file_content path="[^"\n]*">\n(?<after>[\s\S]*?)\n</final_file_content>\n\nIMPORTANT: [^\n]*(?<note>[\s\S]*)$`,
      ),
    },
    // The user changed the content before saving: only the echoed file says what it is now.
    {
      pattern: re(
        String.raw`^${HEADER}The user made the following updates to your content:\n[\s\S]*?\n<final_file_content path="[^"\n]*">\n(?<after>[\s\S]*?)\n</final_file_content>\n\n`,
      ),
    },
    {
      pattern: re(String.raw`^${HEADER}The user made the following updates to your content:`),
      opaque: true,
    },
    // Builds without the echo; an echo of a shape not known above leaves the change unknown.
    {
      pattern: re(
        String.raw`^${HEADER}The content was successfully saved to [^\n]*?\.(?<note>(?![\s\S]*<final_file_content)[\s\S]*)$`,
      ),
    },
    { pattern: re(String.raw`^${HEADER}The content was successfully saved to `), opaque: true },
    // Cline 4's apply_patch found a hunk's lines only loosely (a fuzz factor above 0): where it
    // changed the file cannot be told from the patch. Touched, not derived.
    {
      pattern:
        /^Successfully applied patch to the following files:\n[\s\S]*\nNote: Patch applied with fuzz factor [1-9]\d*$/,
      opaque: true,
    },
    // ApplyPatchHandler (classic, then each file's content) and Cline 4's apply_patch.
    {
      pattern: re(
        String.raw`^(?:\[apply_patch for patch application\] Result:\n)?Successfully applied patch to the following files:\n(?:\n<final_file_content path="[^"\n]*">\n(?<after>[\s\S]*?)\n</final_file_content>\s*$)?`,
      ),
    },
  ],
  failures: [re(String.raw`^${HEADER}The tool execution failed`), re(String.raw`^${HEADER}Error`)],
  agentStubs: [
    re(String.raw`^${HEADER}\[\[NOTE\] This file read has been removed`),
    // A write whose echoed content context management removed later.
    re(
      String.raw`^${HEADER}The content was successfully saved to [^\n]*\n\nHere is the full, updated content of the file that was saved:\n\n<final_file_content path="[^"\n]*"> \[\[NOTE\] This file read has been removed`,
    ),
    // A repeated read's notice alone, without the content (forks that return it so).
    re(String.raw`^${HEADER}\[(?:DUPLICATE READ|File already read)\] [^\n]*$`),
  ],
  compaction: [
    // The summary is the result of the model's summarize_task call.
    {
      role: 'tool',
      pattern:
        /^(?:\[\w+[^\n]*\] Result:\n)?\n?This session is being continued from a previous conversation that ran out of context\./,
    },
    { role: 'user', pattern: /^Context summary:\n\n/ }, // Cline 4
    { role: 'user', pattern: /^<SYSTEM_NOTICE>\nEarlier context was compacted\./ }, // Cline 4, basic
  ],
})

// Cline 4 wraps every answer: `{query, result, success, error?}`, in an array for the tools that
// take several items (read_files, search_codebase, run_commands). research/agents.md §5b.
const ENTRY = { text: 'result', ok: 'success' } as const
const ENTRIES = { ...ENTRY, list: true } as const

/** Cline 4 (SDK @cline/core, VS Code 4.x, CLI): JSON results. research/agents.md §5b. */
export const clineV4 = defineProfile({
  name: 'cline-v4',
  tools: [
    {
      kind: 'read',
      names: ['read_files'],
      item: 'files',
      path: ['path', 'file_path', 'filePath'],
      range: [{ start: 'start_line', end: 'end_line' }],
      // readTextWindow numbers the file's lines only, not the empty string after the last "\n".
      realFinalEmpty: true,
      json: ENTRIES,
    },
    {
      kind: 'edit',
      names: ['editor'],
      path: ['path'],
      // With insert_line the editor inserts, whatever else is given; without old_text it creates.
      edit: [
        { insert: 'new_text', line: 'insert_line', base: 'before' },
        { old: 'old_text', new: 'new_text' },
      ],
      content: ['new_text'],
      json: ENTRY,
    },
    { kind: 'search', names: ['search_codebase'] },
    { kind: 'shell', names: ['run_commands'], commands: ['commands'], json: ENTRIES },
  ],
  // A command's output is cut in its middle like any long result string (below): its head, the
  // notice and its tail are no file's lines.
  shellEnvelopes: [
    { any: /\n\n\.\.\.\[truncated \d+ chars(?: to fit provider request budget)?\]\.\.\.\n\n/ },
  ],
  envelopes: [
    // message-builder.ts cuts the middle of every long result string at request build. First: a
    // window's footer may end the tail it keeps. The tail is shown too: the read is never a stub.
    {
      pattern:
        /^(?<body>[\s\S]*?)\n\n\.\.\.\[truncated \d+ chars(?: to fit provider request budget)?\]\.\.\.\n\n[\s\S]*$/,
      cut: 'middle',
    },
    // file-read.ts: a window shorter than the file ends with where it is.
    {
      pattern:
        /^(?<body>[\s\S]*?)\n\n\[Showing lines (?<start>\d+)-(?<end>\d+) of (?:(?<of>\d+)|\d+\+)\. Use start_line\/end_line to read other sections\.\]$/,
    },
  ],
  success: [
    { pattern: /^Edited [^\n]+\n```diff\n/ },
    { pattern: /^Inserted content at line \d+ in [^\n]+\.$/ },
    // Creation answers "File created successfully at: <path>", as Claude Code's Write does.
  ],
  // message-builder.ts: a read a later read or edit of the same file makes stale.
  agentStubs: [/^\[outdated - see the latest file content\]/],
})
