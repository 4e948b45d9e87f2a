import type { Reporter, TestModule } from 'vitest/node';
import { browserTestsRun } from '../e2e/chromium.ts';

/**
 * What `npm test` says at its end beside the results: which browser tests were skipped and how
 * to run them, and which tests came within half of their timeout. A test that passes only on a
 * fast machine is a test that fails on a slow one: each listed here needs a wider timeout, or to
 * do less. Nothing here fails a run (timings are never asserted); it tells.
 */

/** A test whose time passed this share of its timeout would fail on a machine slower by half. */
const MARGIN = 0.5;

export default class RunNotes implements Reporter {
  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const tight: string[] = [];
    let browserSkipped = 0;
    for (const module of modules) {
      for (const test of module.children.allTests()) {
        const name = `${module.moduleId.replace(/^.*?\/test\//, 'test/')} › ${test.fullName}`;
        if (test.result().state === 'skipped' && /Chromium/.test(test.fullName)) browserSkipped++;
        const duration = test.diagnostic()?.duration;
        const timeout = test.options.timeout;
        if (duration !== undefined && timeout !== undefined && timeout > 0 && duration > timeout * MARGIN)
          tight.push(`  ${Math.round(duration)} ms of ${timeout} ms: ${name}`);
      }
    }
    if (!browserTestsRun && browserSkipped > 0) {
      console.log(
        `\n${browserSkipped} browser tests were skipped: Chromium is not installed here. To run them, install` +
          ' it (Debian or Ubuntu: apt-get install -y chromium) and run npm test again. CI (CI=true) always runs them.',
      );
    }
    if (tight.length > 0) {
      console.log(`\nTests that took more than half of their timeout (they would fail on a machine slower by half):`);
      for (const line of tight) console.log(line);
    }
  }
}
