// The daemon's lifecycle without VS Code: where nexusd is, what its stderr
// says when it cannot start, how often it may be restarted, and what the
// status bar says. daemon.ts and status.ts use these.

import fs from 'node:fs';
import path from 'node:path';

export const INSTALL_HINT =
  'Install the Nexus extension for your platform (its VSIX carries nexusd), ' +
  'or nexusd from a release archive or with `go install github.com/nexuscocreate/nexus/cmd/nexusd@latest` (or `make build` in a clone), ' +
  'or set nexus.daemonPath.';

/** exeName is a program's file name on the platform: with .exe on Windows. */
export function exeName(name: string, platform: NodeJS.Platform = process.platform): string {
  return platform === 'win32' ? `${name}.exe` : name;
}

/** isExecutable tells whether p is a file this process may run. */
function isExecutable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

/** Bundle is the nexusd and nexus that a platform VSIX carries in its
 * bin/ (scripts/dist.sh puts them there); the universal VSIX has none. */
export interface Bundle {
  /** dir is the extension's bin/, for the terminals' PATH. */
  dir: string;
  nexusd: string;
  nexus: string;
  /** fixed names the files whose executable bit was restored. */
  fixed: string[];
}

/** findBundle is the bundle in the extension's directory, or undefined
 * when it carries no nexusd. vsce keeps a file's mode in the VSIX and VS
 * Code's installer restores it, but an unzip that drops modes leaves the
 * binaries unrunnable: on unix a bundled binary that is not executable
 * gets mode 0755 (listed in fixed). A chmod that fails leaves it as it is;
 * findDaemon then passes it over and names it. */
export function findBundle(extensionPath: string, platform: NodeJS.Platform = process.platform): Bundle | undefined {
  const dir = path.join(extensionPath, 'bin');
  const bundle: Bundle = { dir, nexusd: path.join(dir, exeName('nexusd', platform)), nexus: path.join(dir, exeName('nexus', platform)), fixed: [] };
  if (!fs.existsSync(bundle.nexusd)) {
    return undefined;
  }
  if (platform !== 'win32') {
    for (const p of [bundle.nexusd, bundle.nexus]) {
      try {
        if (fs.statSync(p).isFile() && !isExecutable(p)) {
          fs.chmodSync(p, 0o755);
          bundle.fixed.push(p);
        }
      } catch {
        // Missing, or not ours to change: findDaemon says so.
      }
    }
  }
  return bundle;
}

/** Where the nexusd to run was found. */
export type DaemonSource = 'nexus.daemonPath' | 'bundled' | 'PATH';

/** DaemonChoice is the nexusd to run and where it was found; without one,
 * what was tried, for the error. */
export type DaemonChoice = { path: string; source: DaemonSource } | { path: undefined; tried: string[] };

/** findDaemon is the nexusd to run: nexus.daemonPath when it is set (and
 * then nothing else: a setting that names no program is an error, not a
 * reason to run another nexusd), else the bundled one (a platform VSIX's
 * bin/nexusd), else nexusd on PATH. */
export function findDaemon(opts: {
  configured?: string;
  bundled?: string;
  envPath?: string;
  platform?: NodeJS.Platform;
}): DaemonChoice {
  const { configured, bundled, envPath = process.env.PATH, platform = process.platform } = opts;
  if (configured) {
    return isExecutable(configured) ? { path: configured, source: 'nexus.daemonPath' } : { path: undefined, tried: [`${configured} (nexus.daemonPath)`] };
  }
  const tried: string[] = [];
  if (bundled) {
    if (isExecutable(bundled)) {
      return { path: bundled, source: 'bundled' };
    }
    tried.push(`${bundled} (bundled with the extension, not executable)`);
  }
  const name = exeName('nexusd', platform);
  const delimiter = platform === 'win32' ? ';' : ':';
  for (const dir of (envPath ?? '').split(delimiter)) {
    if (dir === '') {
      continue;
    }
    const p = path.join(dir, name);
    if (isExecutable(p)) {
      return { path: p, source: 'PATH' };
    }
  }
  tried.push(`${name} on PATH`);
  return { path: undefined, tried };
}

/** notFoundMessage says that no nexusd was found, what was tried and how
 * to install one. */
export function notFoundMessage(tried: string[]): string {
  return `nexusd was not found: tried ${tried.join(', then ')}. ${INSTALL_HINT}`;
}

/** servedFolders are the workspace folders that get a daemon: each local
 * folder with a .nexus directory; when none has one, the first local folder
 * (nexusd makes its .nexus). */
export function servedFolders<F extends { uri: { scheme: string; fsPath: string } }>(folders: readonly F[]): F[] {
  const local = folders.filter((f) => f.uri.scheme === 'file');
  const withNexus = local.filter((f) => fs.existsSync(path.join(f.uri.fsPath, '.nexus')));
  return withNexus.length > 0 ? withNexus : local.slice(0, 1);
}

/** Fatal is a start failure that a restart would not mend. */
export type Fatal =
  | { kind: 'locked'; pid: string; message: string }
  | { kind: 'config'; file: string; line: number; column: number; message: string };

/** classifyStderr recognises, in what nexusd wrote to stderr, the failures
 * not worth a restart: the workspace locked by another daemon, and an
 * invalid .nexus/config.yaml (with the line and column when given). */
export function classifyStderr(stderr: string): Fatal | undefined {
  const locked = /another nexusd \(pid (\d+)\) is already running for this workspace[^\n]*/.exec(stderr);
  if (locked) {
    return { kind: 'locked', pid: locked[1], message: locked[0] };
  }
  const idx = stderr.indexOf('invalid configuration');
  if (idx >= 0) {
    const rest = stderr.slice(idx);
    const loc = /(\S*config\.yaml):(\d+)(?::(\d+))?:\s*([^\n]*)/.exec(rest);
    if (loc) {
      return { kind: 'config', file: loc[1], line: Number(loc[2]), column: loc[3] ? Number(loc[3]) : 1, message: loc[4] };
    }
    const line = rest.split('\n').slice(0, 3).join(' ').trim();
    return { kind: 'config', file: '', line: 0, column: 0, message: line };
  }
  return undefined;
}

/** RestartBudget allows at most max restarts within windowMs, each after
 * a backoff that doubles from baseMs. */
export class RestartBudget {
  private restarts: number[] = [];

  constructor(
    private readonly max = 5,
    private readonly windowMs = 3 * 60_000,
    private readonly baseMs = 500,
  ) {}

  /** next is the delay before the next restart, or undefined when the
   * budget is spent (and the daemon should stay down). */
  next(now: number = Date.now()): number | undefined {
    this.restarts = this.restarts.filter((t) => now - t < this.windowMs);
    if (this.restarts.length >= this.max) {
      return undefined;
    }
    const delay = this.baseMs * 2 ** this.restarts.length;
    this.restarts.push(now);
    return delay;
  }

  reset(): void {
    this.restarts = [];
  }
}

/** The daemon's state as the status bar shows it. */
export type DaemonState = 'starting' | 'ready' | 'stopped';

/** overallState is the state of several daemons as one: stopped when all
 * are (or there are none), starting while any starts, else ready. */
export function overallState(states: DaemonState[]): DaemonState {
  if (states.every((s) => s === 'stopped')) {
    return 'stopped';
  }
  return states.some((s) => s === 'starting') ? 'starting' : 'ready';
}

/** statusText is the status bar text; stopped counts the folders whose
 * daemon stopped while others run. */
export function statusText(state: DaemonState, running: number, approvals: number, stopped = 0): string {
  if (state === 'stopped') {
    return '$(error) Nexus: stopped';
  }
  if (approvals > 0) {
    return `$(bell) Nexus: ${approvals} approval${approvals === 1 ? '' : 's'}`;
  }
  if (stopped > 0) {
    return `$(warning) Nexus: ${stopped} stopped`;
  }
  if (running > 0) {
    return `$(sync~spin) Nexus: ${running} running`;
  }
  if (state === 'starting') {
    return '$(sync~spin) Nexus: starting';
  }
  return '$(check) Nexus';
}
