// Which page of docs/ holds which process's settings table (paths from the repository root).
import type { Setting } from '@session-relay/common/config/settings'
import { settings as controlSettings } from '@session-relay/control/config'
import { settings as relaySettings } from '@session-relay/relay/config'

export type SettingsPage = { page: string; name: string; settings: ReadonlyArray<Setting<never>> }

export const SETTINGS_PAGES: SettingsPage[] = [
  { page: 'docs/relay.md', name: 'relay', settings: relaySettings as unknown as ReadonlyArray<Setting<never>> },
  {
    page: 'docs/control-plane.md',
    name: 'control',
    settings: controlSettings as unknown as ReadonlyArray<Setting<never>>,
  },
]
