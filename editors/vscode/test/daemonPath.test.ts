// Which nexusd the extension runs: nexus.daemonPath, else the one a
// platform VSIX carries, else nexusd on PATH; and the bundle's files.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { findBundle, findDaemon, INSTALL_HINT, notFoundMessage } from '../src/lifecycle';

/** dirs makes a temporary directory with an installed extension's bin/
 * and two PATH directories, and removes it after the test. */
function dirs(t: { after(fn: () => void): void }) {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'nexus-daemon-path-'));
  t.after(() => fs.rmSync(root, { recursive: true, force: true }));
  const ext = path.join(root, 'ext');
  const onPath = path.join(root, 'path');
  const empty = path.join(root, 'empty');
  for (const d of [path.join(ext, 'bin'), onPath, empty]) {
    fs.mkdirSync(d, { recursive: true });
  }
  return { root, ext, onPath, empty };
}

function program(p: string, mode = 0o755): string {
  fs.writeFileSync(p, '#!/bin/sh\n');
  fs.chmodSync(p, mode);
  return p;
}

test('daemon path: nexus.daemonPath wins over the bundled nexusd and PATH', (t) => {
  const d = dirs(t);
  const configured = program(path.join(d.root, 'my-nexusd'));
  const bundled = program(path.join(d.ext, 'bin', 'nexusd'));
  program(path.join(d.onPath, 'nexusd'));
  assert.deepEqual(findDaemon({ configured, bundled, envPath: d.onPath }), { path: configured, source: 'nexus.daemonPath' });
});

test('daemon path: a nexus.daemonPath that is no program is an error, not a reason to run another', (t) => {
  const d = dirs(t);
  const bundled = program(path.join(d.ext, 'bin', 'nexusd'));
  program(path.join(d.onPath, 'nexusd'));
  const missing = path.join(d.root, 'nowhere', 'nexusd');
  const notExe = program(path.join(d.root, 'plain'), 0o644);
  for (const configured of [missing, notExe, d.root]) {
    const found = findDaemon({ configured, bundled, envPath: d.onPath });
    assert.deepEqual(found, { path: undefined, tried: [`${configured} (nexus.daemonPath)`] });
  }
});

test('daemon path: the bundled nexusd wins over PATH; without a bundle, PATH', (t) => {
  const d = dirs(t);
  const bundled = program(path.join(d.ext, 'bin', 'nexusd'));
  const onPath = program(path.join(d.onPath, 'nexusd'));
  const envPath = [d.empty, d.onPath].join(path.delimiter);
  assert.deepEqual(findDaemon({ bundled, envPath }), { path: bundled, source: 'bundled' });
  assert.deepEqual(findDaemon({ envPath }), { path: onPath, source: 'PATH' });
  // An empty setting is no setting.
  assert.deepEqual(findDaemon({ configured: '', envPath }), { path: onPath, source: 'PATH' });
});

test('daemon path: a bundled nexusd that cannot run is passed over, and named when nothing is found', (t) => {
  const d = dirs(t);
  const bundled = program(path.join(d.ext, 'bin', 'nexusd'), 0o644);
  const onPath = program(path.join(d.onPath, 'nexusd'));
  assert.deepEqual(findDaemon({ bundled, envPath: d.onPath }), { path: onPath, source: 'PATH' });
  const found = findDaemon({ bundled, envPath: d.empty });
  assert.deepEqual(found, { path: undefined, tried: [`${bundled} (bundled with the extension, not executable)`, 'nexusd on PATH'] });
  assert.equal(
    notFoundMessage(found.path === undefined ? found.tried : []),
    `nexusd was not found: tried ${bundled} (bundled with the extension, not executable), then nexusd on PATH. ${INSTALL_HINT}`,
  );
  // The universal VSIX: only PATH was tried.
  assert.deepEqual(findDaemon({ envPath: '' }), { path: undefined, tried: ['nexusd on PATH'] });
});

test('daemon path: on Windows, nexusd.exe and PATH split at ;', (t) => {
  const d = dirs(t);
  program(path.join(d.onPath, 'nexusd'));
  const exe = program(path.join(d.onPath, 'nexusd.exe'));
  assert.deepEqual(findDaemon({ envPath: `${d.empty};${d.onPath}`, platform: 'win32' }), { path: exe, source: 'PATH' });
});

test('bundle: none without bin/nexusd; a bundled binary that lost its executable bit gets 0755', (t) => {
  const d = dirs(t);
  assert.equal(findBundle(d.ext, 'linux'), undefined);
  const nexusd = program(path.join(d.ext, 'bin', 'nexusd'), 0o644);
  const nexus = program(path.join(d.ext, 'bin', 'nexus'), 0o755);
  const bundle = findBundle(d.ext, 'linux');
  assert.deepEqual(bundle, { dir: path.join(d.ext, 'bin'), nexusd, nexus, fixed: [nexusd] });
  assert.equal(fs.statSync(nexusd).mode & 0o777, 0o755);
  assert.deepEqual(findDaemon({ bundled: bundle?.nexusd, envPath: d.empty }), { path: nexusd, source: 'bundled' });
  // Once fixed, nothing more to fix.
  assert.deepEqual(findBundle(d.ext, 'linux')?.fixed, []);
});

test('bundle: on Windows, bin/nexusd.exe and no mode to change', (t) => {
  const d = dirs(t);
  program(path.join(d.ext, 'bin', 'nexusd'), 0o644);
  assert.equal(findBundle(d.ext, 'win32'), undefined);
  const exe = program(path.join(d.ext, 'bin', 'nexusd.exe'), 0o644);
  const bundle = findBundle(d.ext, 'win32');
  assert.equal(bundle?.nexusd, exe);
  assert.equal(bundle?.nexus, path.join(d.ext, 'bin', 'nexus.exe'));
  assert.deepEqual(bundle?.fixed, []);
  assert.equal(fs.statSync(exe).mode & 0o777, 0o644);
});
