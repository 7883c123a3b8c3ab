// Mocha reporter: the Spec reporter's output, plus the run's counts written as
// JSON to the file named by --reporter-option out=<file>, for scripts/test.ts.
'use strict';
const fs = require('node:fs');
const Mocha = require('mocha');

class TierReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const out = options.reporterOption && options.reporterOption.out;
    const failures = [];
    // Wall time per test file (its root-level suites, hooks included), so the
    // runner can name the files that make a tier slow.
    const fileStarted = new Map();
    const fileSeconds = new Map();
    runner.on('fail', (test, err) => failures.push({ title: test.fullTitle(), error: String(err && err.message) }));
    runner.on('suite', (suite) => {
      if (suite.file && suite.parent && suite.parent.root && !fileStarted.has(suite.file)) fileStarted.set(suite.file, Date.now());
    });
    runner.on('suite end', (suite) => {
      if (!suite.file || !suite.parent || !suite.parent.root) return;
      const begun = fileStarted.get(suite.file);
      if (begun !== undefined) fileSeconds.set(suite.file, (Date.now() - begun) / 1000);
    });
    runner.once('end', () => {
      if (!out) return;
      const s = runner.stats;
      fs.writeFileSync(out, JSON.stringify({ passes: s.passes, failures: s.failures, pending: s.pending, tests: s.tests, durationMs: s.duration, failed: failures, files: [...fileSeconds].map(([file, seconds]) => ({ file, seconds })) }));
    });
  }
}
module.exports = TierReporter;
