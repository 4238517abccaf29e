// The container's HEALTHCHECK: GET /healthz on the port PLATFORM_ADDR names. Exit 0 when
// healthy, 1 otherwise.
import { probeHealth } from '../../common/src/healthcheck.js'

probeHealth(process.env.PLATFORM_ADDR || ':8081', { tls: false })
