// The local runtime's toolchain check for js and ts: the builder's npm packages must be where
// the control plane resolves packages. The control image leaves them out (its builds run in a
// cluster's Jobs), so a js build there answers 503 naming them rather than failing later.
import t from 'tap'
import { toolchainCheck } from '../../control/src/local/programs.js'

const ADVICE = '(the control image leaves it out; run the control plane from a checkout after npm ci, or build in a cluster)'

t.test('js and ts without the builder\'s packages: the reason names each missing one', async (t) => {
  const none = toolchainCheck('', () => false)
  t.equal(await none('js'), `js builds need the js toolchain: @spinframework/build-tools and esbuild are not installed here ${ADVICE}`)
  const noEsbuild = toolchainCheck('', (name) => name !== 'esbuild')
  t.equal(await noEsbuild('ts'), `ts builds need the js toolchain: esbuild is not installed here ${ADVICE}`)
})

t.test('in a checkout after npm ci both resolve: js and ts can build', async (t) => {
  const check = toolchainCheck('')
  t.equal(await check('js'), null)
  t.equal(await check('ts'), null)
})
