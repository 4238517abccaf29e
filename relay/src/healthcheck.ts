// The container's HEALTHCHECK: GET /healthz on the port RELAY_ADDR names, over TLS when the
// relay serves TLS. Exit 0 when healthy, 1 otherwise.
import { probeHealth } from '@session-relay/common/healthcheck'

probeHealth(process.env.RELAY_ADDR || ':8080', { tls: (process.env.RELAY_TLS_CERT ?? '') !== '' })
