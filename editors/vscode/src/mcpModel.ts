// What the MCP Servers view and its trust prompts say about a server
// entry; no vscode API, so that the tests run it in node.

import type { HookStatus, McpLaunch } from './protocol';

/**
 * launchText is what an MCP server entry runs, for the person who approves
 * it: its command line (with the names of its env), or its url; an oauth
 * block whose ID token comes from a command (the enterprise grant) names
 * that command too, since approving the entry lets it run.
 */
export function launchText(l: McpLaunch): string {
  if (l.url) {
    const idTokenCommand = l.oauth?.idp?.idTokenCommand ?? [];
    return idTokenCommand.length ? `${l.url} (its ID token from: ${commandLine(idTokenCommand)})` : l.url;
  }
  const line = commandLine([l.command ?? '', ...(l.args ?? [])]);
  const env = Object.keys(l.env ?? {});
  return env.length ? `${line} (env: ${env.join(', ')})` : line;
}

const quote = (a: string) => (/^[\w@%+=:,./-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`);
const commandLine = (argv: string[]) => argv.filter((a) => a !== '').map(quote).join(' ');

/**
 * hookText is what a hook of .nexus/config.yaml runs, for the person who
 * approves it: its command line, when it runs (the event and the tools it
 * matches), and the workspace files its command names with the start of
 * their SHA-256, which the approval pins.
 */
export function hookText(h: HookStatus): string {
  const when = h.match ? `${h.event}, tools matching ${h.match}` : h.event;
  const files = (h.files ?? []).map((f) => `${f.path} sha256:${f.sha256.slice(0, 12)}`);
  return `${commandLine(h.command)} (${when}${files.length ? `; pins ${files.join(', ')}` : ''})`;
}
