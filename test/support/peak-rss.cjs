// Preloaded into a berth process (node --require): at its exit, its peak resident set (VmHWM,
// kB) is written to the file BERTH_TEST_PEAK_RSS_FILE names, for tests that bound berth's memory.
'use strict';
const fs = require('node:fs');
const file = process.env.BERTH_TEST_PEAK_RSS_FILE;
if (file)
  process.on('exit', () => {
    const m = /VmHWM:\s+(\d+) kB/.exec(fs.readFileSync('/proc/self/status', 'utf8'));
    fs.writeFileSync(file, m ? m[1] : '');
  });
