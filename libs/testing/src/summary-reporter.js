/**
 * Jest reporter that closes a run with one plain line, `tests: N passed, N failed, N skipped`, which log readers
 * and CI can count without knowing Jest's own summary format. It also writes the line to
 * `tmp/test-summary.txt` so a script that runs more steps after the tests (`.ci/run`) can repeat it last.
 */
const fs = require('node:fs');
const path = require('node:path');

class SummaryReporter {
  constructor(globalConfig) {
    this.rootDir = globalConfig.rootDir;
  }

  onRunComplete(_contexts, results) {
    const failed = results.numFailedTests + results.numRuntimeErrorTestSuites;
    const skipped = results.numPendingTests + results.numTodoTests;
    const line = `tests: ${results.numPassedTests} passed, ${failed} failed, ${skipped} skipped`;
    // Jest's own summary is printed after every custom reporter's onRunComplete; wait for it so this line closes.
    setImmediate(() => process.stderr.write(`${line}\n`));
    try {
      const dir = path.join(this.rootDir, 'tmp');
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, 'test-summary.txt'), `${line}\n`);
    } catch {
      // The summary file is a convenience; the printed line is the record.
    }
  }
}

module.exports = SummaryReporter;
