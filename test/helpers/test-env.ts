// The control plane's settings in every test unless the test names its own (a flag, or the
// same variable): the js engine seed made by the first js build that needs one, not from the
// start. Each test has a data directory of its own, so a seed made at every start would be a
// whole template build (about 16 CPU-seconds) for each control plane the tests start, most of
// which never build js. local-js-seed-start.test.ts runs the default.
export const TEST_ENV: Record<string, string> = { PLATFORM_LOCAL_JS_SEED: 'first-build' }
