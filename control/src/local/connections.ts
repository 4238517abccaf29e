// Kept-alive connections to one loaded generation of an application: invokes reuse them rather
// than open a connection each (a third of the invoke's cost on loopback). A generation that
// is replaced (a redeploy loaded its successor), removed or lost with the worker is retired:
// no new request takes it, and its connections close once the requests in flight on it end,
// so no request is sent on a connection that belonged to something no longer there.
import http from 'node:http'

export type Connections = {
  agent: http.Agent
  /** A request goes out on this generation: call the function returned once its answer is read. */
  use: () => () => void
  /** Replaced or gone: its connections close when the requests in flight end (at once when none). */
  retire: () => void
}

export function createConnections(): Connections {
  const agent = new http.Agent({ keepAlive: true })
  let inFlight = 0
  let retired = false
  const closeWhenDone = (): void => {
    if (retired && inFlight === 0) agent.destroy()
  }
  return {
    agent,
    use() {
      inFlight++
      let done = false
      return () => {
        if (done) return
        done = true
        inFlight--
        closeWhenDone()
      }
    },
    retire() {
      retired = true
      closeWhenDone()
    },
  }
}
