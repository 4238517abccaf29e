// The container's HEALTHCHECK: GET /healthz on the port PLATFORM_ADDR names. Exit 0 when
// healthy, 1 otherwise.
import { probeHealth } from '@session-relay/common/healthcheck'

probeHealth(process.env.PLATFORM_ADDR || ':8081', { tls: false })
