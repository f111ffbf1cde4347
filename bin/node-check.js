'use strict';
// berth needs Node.js >= 22.22 (package.json's `engines`). Checked before anything else loads, in
// syntax any Node parses, so an older Node ends in one line and exit 2, never a stack trace.
// A checkout's own Node (scripts/node-up.sh, run by `make setup`) is .node/bin/node.
// The single-file build (scripts/build-cli.ts) runs this function as its banner.
/** repo: the folder bin/ is in (undefined in the single-file build). */
module.exports = function checkNode(repo) {
  var MIN = [22, 22];
  var v = process.versions.node.split('.').map(Number);
  if (v[0] > MIN[0] || (v[0] === MIN[0] && v[1] >= MIN[1])) return;
  var path = require('path');
  var fs = require('fs');
  // In a checkout, the project's own Node; elsewhere (the npm package, berth.cjs), any maintained one.
  var checkout = repo && fs.existsSync(path.join(repo, 'scripts', 'node-up.sh'));
  var own = checkout ? path.join(repo, '.node', 'bin', 'node') : '';
  var hint = !checkout ? '; install a maintained release' : fs.existsSync(own) ? '; run it with ' + own : '; `make setup` installs one at ' + own;
  process.stderr.write('berth: needs Node.js >= ' + MIN.join('.') + ', this is ' + process.version + ' (' + process.execPath + ')' + hint + '\n');
  process.exit(2);
};
