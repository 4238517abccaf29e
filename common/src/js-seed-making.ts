// The name of a js engine seed maker's work in progress in the seeds directory. Shared because
// two packages that do not depend on each other must agree on it: the maker
// (builders/src/make-js-seed.ts) names its directory so, a later maker removes a dead one's
// (builders/src/js-seed-prune.ts), and the control plane removes a killed maker's, taking only
// a name of this shape from the maker's output (control/src/local/js-seed.ts).

/** What the maker passes mkdtemp, which appends six characters of [A-Za-z0-9]. */
export const MAKING_PREFIX = '.making-'

/** A maker's work directory: the prefix and mkdtemp's six characters, nothing else. */
export const MAKING_NAME = /^\.making-[A-Za-z0-9]{6}$/
