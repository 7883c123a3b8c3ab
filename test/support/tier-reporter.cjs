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
    runner.on('fail', (test, err) => failures.push({ title: test.fullTitle(), error: String(err && err.message) }));
    runner.once('end', () => {
      if (!out) return;
      const s = runner.stats;
      fs.writeFileSync(out, JSON.stringify({ passes: s.passes, failures: s.failures, pending: s.pending, tests: s.tests, durationMs: s.duration, failed: failures }));
    });
  }
}
module.exports = TierReporter;
