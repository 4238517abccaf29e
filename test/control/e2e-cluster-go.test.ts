// A go application in the (fake) cluster, as a user meets it: the control plane's build Job runs
// the go builder (stock Go, the WAGI executor), which pushes to a real registry; the fake
// spin-operator's shim pulls the SpinApp's image, checks it and serves it through the wasmtime
// worker, WAGI as Spin runs it; invoke through the control plane answers with the template's
// text (test/helpers/cluster-template.ts). Needs Go on PATH (as builder-go.test.ts). The Job's
// DEPENDENCY_CACHE is the builder tests' .cache/test-go-deps: Go's standard library for wasip1
// compiles once (96-116 s), not in every run (docs/testing.md).
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import t from 'tap'
import { BUILD_TIMEOUT, LOAD_TIMEOUT, componentHeader, templateInCluster } from '../helpers/cluster-template.js'

t.setTimeout(BUILD_TIMEOUT + LOAD_TIMEOUT + 60_000)
const deps = join(fileURLToPath(new URL('../../', import.meta.url)), '.cache', 'test-go-deps')

t.test(
  'go in the cluster: Job → go builder → registry → SpinApp → shim (WAGI) → invoke answers with the template',
  async (t) => {
    mkdirSync(deps, { recursive: true })
    const header = await componentHeader(t, await templateInCluster(t, 'go', { dependencyCache: deps }))
    t.equal(header, '0061736d01000000', 'a core module, which the shim runs with the WAGI executor')
  },
)
