export { createWorkspace, countFileLines, type FileSnapshot, type Workspace } from './files.js'
