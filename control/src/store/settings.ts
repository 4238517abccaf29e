// Where the control plane keeps its state: the database (PostgreSQL, or PGlite in the data
// directory) and the key that seals secret variables. Read by server.ts and store/.
import { anyText } from '@session-relay/common/config/settings'
import { rowOf } from '../setting-parsers.js'

export type StoreSettings = {
  databaseUrl: string // empty: embedded PGlite in dataDir
  dataDir: string
  secretKeyFile: string // '' : {dataDir}/secret.key, generated
}

const setting = rowOf<StoreSettings>()

// The URL may hold a password, so its row is marked secret and errors never repeat it.
function parseDatabaseUrl(text: string): string {
  if (text === '') return ''
  if (!/^postgres(ql)?:\/\//i.test(text) || !URL.canParse(text))
    throw new Error('expected a postgres:// or postgresql:// URL')
  return text
}

export const storeSettings = [
  setting({
    key: 'databaseUrl',
    env: 'PLATFORM_DATABASE_URL',
    flag: '--database-url',
    default: '',
    parse: parseDatabaseUrl,
    help: 'postgres:// URL; empty: embedded PGlite in the data directory',
    secret: true,
  }),
  setting({
    key: 'dataDir',
    env: 'PLATFORM_DATA_DIR',
    flag: '--data-dir',
    default: './data/control',
    parse: anyText,
    help: "the embedded database's directory; one process per directory",
  }),
  setting({
    key: 'secretKeyFile',
    env: 'PLATFORM_SECRET_KEY_FILE',
    flag: '--secret-key-file',
    default: '',
    parse: anyText,
    help: "key file that encrypts secret variables at rest; empty: the data dir's",
  }),
]
