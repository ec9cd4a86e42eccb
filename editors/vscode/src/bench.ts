// Timestamps for the benchmarks (editors/vscode/e2e/run.mjs --bench): when
// NEXUS_BENCH_FILE (or the nexus.benchFile setting) names a file, each
// event is appended to it as a JSON line {event, t} (t: ms since the epoch).

import fs from 'node:fs';
import * as vscode from 'vscode';

let file: string | undefined;

/** benchInit reads where the timestamps go; call it first in activate. */
export function benchInit(): void {
  file = process.env.NEXUS_BENCH_FILE || vscode.workspace.getConfiguration('nexus').get<string>('benchFile') || undefined;
}

/** benchMark appends {event, t} to the bench file, if there is one. */
export function benchMark(event: string, t: number = Date.now()): void {
  if (!file) {
    return;
  }
  try {
    fs.appendFileSync(file, JSON.stringify({ event, t }) + '\n');
  } catch {
    // A benchmark aid: never in the way.
  }
}
