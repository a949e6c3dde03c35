/**
 * The file piscina loads in each pool thread: CommonJS, so that piscina's
 * `require()` of it is a plain require. Given the ES module thread.js
 * itself, piscina's `require()` goes through Node 20's require(esm), which
 * has aborted a whole process with a V8 fatal error ("IsGraphAsync must be
 * used on an instantiated module"), now and then, in our test runs.
 *
 * The export is a Promise of the task function: piscina awaits it before the
 * thread reports ready, as it did its own load of thread.js, so a thread
 * takes tasks only once the module is loaded.
 */
module.exports = import('./thread.js').then((thread) => thread.default);
