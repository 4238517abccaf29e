// The source's file list and the form that adds a file: a file changed since the last save is
// marked, and a new file starts empty in the map (it reaches the server on Save).
import { useState } from 'preact/hooks'

// A new file's example name in the application's language, where its template keeps sources.
const NEW_FILE_EXAMPLE: Record<string, string> = {
  js: 'src/util.js',
  ts: 'src/util.ts',
  go: 'util.go',
  rust: 'src/util.rs',
}

export function SourceFiles({
  files,
  saved,
  current,
  language,
  canWrite,
  onPick,
  onAdd,
  onError,
}: {
  files: Record<string, string>
  saved: Record<string, string>
  current: string | null
  language: string
  canWrite: boolean
  onPick: (name: string) => void
  onAdd: (name: string) => void
  onError: (message: string) => void
}) {
  const [newName, setNewName] = useState('')
  const names = Object.keys(files).sort()
  return (
    <div class="files">
      <ul aria-label="Files">
        {names.map((name) => (
          <li key={name}>
            <button
              type="button"
              class="link"
              aria-current={name === current ? 'true' : undefined}
              onClick={() => onPick(name)}
            >
              {name}
              {files[name] !== saved[name] && ' •'}
            </button>
          </li>
        ))}
        {names.length === 0 && <li class="muted">no files yet</li>}
      </ul>
      {canWrite && (
        <form
          onSubmit={(event) => {
            event.preventDefault()
            const name = newName.trim()
            if (name === '' || name in files) {
              onError(name === '' ? 'Give the new file a name.' : `${name} exists already.`)
              return
            }
            onAdd(name)
            setNewName('')
          }}
        >
          <label>
            New file{' '}
            <input
              name="new-file"
              value={newName}
              placeholder={NEW_FILE_EXAMPLE[language] ?? 'README.md'}
              onInput={(e) => setNewName(e.currentTarget.value)}
              autoComplete="off"
            />
          </label>
          <button type="submit">Add file</button>
        </form>
      )}
    </div>
  )
}
