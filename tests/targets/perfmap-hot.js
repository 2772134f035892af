// SPDX-License-Identifier: MIT
// A node target for the perf map test: nearly all its time in cprofHotLoop.
// Runs -s SECONDS (default 30), writes -r FILE once the loop is hot.
'use strict';
// The tests name cprofHotLoop as the leaf: TurboFan must not inline it into
// cprofDriver (it did in some runs, and the perf map then names the
// driver's code only).  Set before anything is optimized.
require('v8').setFlagsFromString('--no-turbo-inlining');
// The hot loop, in one named function.
function cprofHotLoop(n) {
  let x = 0;
  for (let i = 0; i < n; i++) x = (x * 1103515245 + i) % 2147483647;
  return x;
}
function cprofDriver() {
  let acc = 0;
  for (let k = 0; k < 50; k++) acc += cprofHotLoop(200000 + (k & 7));
  return acc;
}
const fs = require('fs');
const args = process.argv.slice(2);
let secs = 30, ready = null;
for (let i = 0; i + 1 < args.length; i += 2) {
  if (args[i] === '-s') secs = Number(args[i + 1]);
  if (args[i] === '-r') ready = args[i + 1];
}
const end = Date.now() + secs * 1000;
let acc = 0, announced = false;
while (Date.now() < end) {
  acc += cprofDriver();
  if (!announced && ready) { fs.writeFileSync(ready, 'ready\n'); announced = true; }
}
console.log('result: OK ' + (acc & 1));
