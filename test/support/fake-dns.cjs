// A DNS server for tests: prints `query <name>` for each question it gets, answers NXDOMAIN.
// Usage: node fake-dns.cjs [address]   (prints `listening` once bound to <address>:53)
'use strict';
const dgram = require('node:dgram');

const sock = dgram.createSocket('udp4');
sock.on('message', (msg, from) => {
  const labels = [];
  let i = 12;
  while (i < msg.length && msg[i] !== 0) {
    const n = msg[i];
    labels.push(msg.subarray(i + 1, i + 1 + n).toString('latin1'));
    i += n + 1;
  }
  process.stdout.write(`query ${labels.join('.')}\n`);
  const answer = Buffer.from(msg);
  answer[2] = 0x81; // a response, recursion desired
  answer[3] = 0x83; // recursion available, NXDOMAIN
  sock.send(answer, from.port, from.address);
});
sock.bind(53, process.argv[2] || '127.0.0.1', () => process.stdout.write('listening\n'));
process.on('SIGTERM', () => sock.close(() => process.exit(0)));
