// What the signed-in caller may do, from GET /api/v1/me (the API's own reading of the token):
// a read-only caller is offered no control that would change something or run code. The API
// refuses such requests anyway (403); hiding them only spares the caller a button that fails.
import { createContext } from 'preact'
import { useContext } from 'preact/hooks'
import type { Me } from '../api/types'

export type Access = { role: Me['role']; canWrite: boolean; tenants: string[]; allTenants: boolean }

export const accessOf = (me: Me): Access => ({
  role: me.role,
  canWrite: me.role !== 'read-only',
  tenants: me.tenants,
  allTenants: me.allTenants,
})

// Outside a provider (never, in the app) nothing is hidden: the API still decides.
export const AccessContext = createContext<Access>({ role: 'member', canWrite: true, tenants: [], allTenants: false })

export const useAccess = (): Access => useContext(AccessContext)

/** Said once on each page that would otherwise have controls, so their absence is explained. */
export function ReadOnlyNotice({ what }: { what: string }) {
  return (
    <p class="notice" data-testid="read-only">
      Read-only access: you can look at {what} but not change, build, deploy or invoke anything.
    </p>
  )
}
