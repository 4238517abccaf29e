// Rename and delete of the file shown, each asked for in place (a name to type, a removal to
// confirm); what they change is the map in the page, which reaches the server on Save. Mounted
// per file, so picking another file drops a half-typed rename or an unanswered confirm.
import { useState } from 'preact/hooks'

export function FileActions({
  current,
  files,
  onRename,
  onDelete,
  onError,
}: {
  current: string
  files: Record<string, string>
  onRename: (to: string) => void
  onDelete: () => void
  onError: (message: string) => void
}) {
  const [renaming, setRenaming] = useState<string | null>(null)
  const [confirmDelete, setConfirmDelete] = useState(false)
  return (
    <div class="row">
      {renaming === null ? (
        <button type="button" onClick={() => setRenaming(current)}>
          Rename
        </button>
      ) : (
        <form
          class="inline"
          onSubmit={(event) => {
            event.preventDefault()
            const to = renaming.trim()
            if (to === '' || (to !== current && to in files)) {
              onError(to === '' ? 'A file needs a name.' : `${to} exists already.`)
              return
            }
            onRename(to)
            setRenaming(null)
          }}
        >
          <label>
            Rename {current} to <input value={renaming} onInput={(e) => setRenaming(e.currentTarget.value)} autoFocus />
          </label>
          <button type="submit">Rename</button>
          <button type="button" onClick={() => setRenaming(null)}>
            Cancel
          </button>
        </form>
      )}
      {!confirmDelete ? (
        <button type="button" class="danger" onClick={() => setConfirmDelete(true)}>
          Delete file
        </button>
      ) : (
        <span class="confirm" role="group" aria-label={`Confirm deleting ${current}`}>
          <span>Remove {current}? (takes effect on Save)</span>
          <button
            type="button"
            class="danger"
            autoFocus
            onClick={() => {
              setConfirmDelete(false)
              onDelete()
            }}
          >
            Yes, remove
          </button>
          <button type="button" onClick={() => setConfirmDelete(false)}>
            Cancel
          </button>
        </span>
      )}
    </div>
  )
}
